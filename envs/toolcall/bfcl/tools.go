package bfcl

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
	"github.com/nextstate-rl/nextstate/envs/toolcall"
)

// openAPITypes maps BFCL's type names to JSON Schema types, as BFCL does
// before it sends function docs to OpenAI-style models (GORILLA_TO_OPENAPI);
// a type it does not list becomes "string".
var openAPITypes = map[string]string{
	"integer": "integer", "number": "number", "float": "number", "string": "string",
	"boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
	"dict": "object", "object": "object", "tuple": "array", "any": "string",
	"byte": "integer", "short": "integer", "long": "integer", "double": "number",
	"char": "string", "ArrayList": "array", "Array": "array", "HashMap": "object",
	"Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
	"String": "string", "Bigint": "integer",
}

// offeredNames gives each function an OpenAI-safe name (^[a-zA-Z0-9_-]{1,64}$):
// dots become underscores as in BFCL, and so does any other character the
// pattern forbids; a name taken twice gets a _2, _3 suffix. It returns the
// offered names in order and the map back to BFCL's names.
func offeredNames(fns []*Dict) ([]string, map[string]string) {
	offers := make([]string, len(fns))
	back := make(map[string]string, len(fns))
	for i, f := range fns {
		name := f.Value("name").(string)
		safe := []byte(name)
		for j, c := range safe {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				safe[j] = '_'
			}
		}
		s := string(safe)
		if len(s) > 64 {
			s = s[:64]
		}
		base := s
		for n := 2; ; n++ {
			if _, taken := back[s]; !taken {
				break
			}
			suffix := "_" + strconv.Itoa(n)
			s = base[:min(len(base), 64-len(suffix))] + suffix
		}
		offers[i] = s
		back[s] = name
	}
	return offers, back
}

// Tools returns the case's functions as tools in the OpenAI shape, as
// BFCL prepares them for function-calling models: the language note
// appended to each description; Java and JavaScript parameters declared as
// strings whose descriptions name the language type; type names mapped to
// JSON Schema (dict→object, float→number with format "float", tuple→array,
// any→string); names made OpenAI-safe.
func (c *Case) Tools() []toolcall.Tool {
	lang := c.Language()
	tools := make([]toolcall.Tool, len(c.Functions))
	for i, f := range c.Functions {
		f = pyval.Copy(f).(*Dict)
		desc, _ := f.Value("description").(string)
		switch lang {
		case "java":
			desc += " Note that the provided function is in Java 8 SDK syntax."
		case "javascript":
			desc += " Note that the provided function is in JavaScript syntax."
		default:
			desc += " Note that the provided function is in Python 3 syntax."
		}
		params, ok := f.Value("parameters").(*Dict)
		if !ok {
			params = NewDict()
		}
		props, ok := params.Value("properties").(*Dict)
		if !ok {
			props = NewDict()
		}
		if lang != "python" {
			languageHints(props, lang)
		}
		params.Set("type", "object")
		params.Set("properties", castTypes(props))
		tools[i] = toolcall.Tool{Name: c.offers[i], Description: desc, Parameters: json.RawMessage(pyval.Dumps(params))}
	}
	return tools
}

// languageHints declares Java and JavaScript parameters as strings of
// source text, naming the language type in the description.
func languageHints(props *Dict, lang string) {
	langName := map[string]string{"java": "Java", "javascript": "JavaScript"}[lang]
	for _, k := range props.Keys {
		p, ok := props.Value(k).(*Dict)
		if !ok {
			continue
		}
		typ, _ := p.Value("type").(string)
		desc, _ := p.Value("description").(string)
		if typ == "any" {
			desc += " This parameter can be of any type of " + langName + " object in string representation."
		} else {
			desc += " This is " + langName + " " + typ + " type parameter in string representation."
		}
		if (lang == "java" && (typ == "ArrayList" || typ == "Array")) || (lang == "javascript" && typ == "array") {
			if items, ok := p.Value("items").(*Dict); ok {
				it, _ := items.Value("type").(string)
				desc += " The list elements are of type " + it + "; they are not in string representation."
			}
			p.Delete("items")
		}
		if lang == "javascript" && typ == "dict" {
			if sub, ok := p.Get("properties"); ok {
				desc += " The dictionary entries have the following schema; they are not in string representation. " + pyval.Dumps(sub)
				p.Delete("properties")
			}
		}
		p.Set("description", desc)
		p.Set("type", "string")
	}
}

// castTypes maps the type names of properties (and of their properties and
// items, at any depth) to JSON Schema types.
func castTypes(props *Dict) *Dict {
	for _, k := range props.Keys {
		if p, ok := props.Value(k).(*Dict); ok {
			castSchema(p, false)
		}
	}
	return props
}

// castSchema maps one schema's type; a property of type float also gets
// format "float" and a note in its description (items do not, as in BFCL).
func castSchema(p *Dict, isItems bool) {
	typ, _ := p.Value("type").(string)
	if typ == "float" && !isItems {
		p.Set("format", "float")
		desc, _ := p.Value("description").(string)
		p.Set("description", desc+" This is a float type value.")
	}
	mapped, ok := openAPITypes[typ]
	if !ok {
		mapped = "string"
	}
	p.Set("type", mapped)
	if sub, ok := p.Value("properties").(*Dict); ok {
		castTypes(sub)
	}
	if items, ok := p.Value("items").(*Dict); ok {
		castSchema(items, true)
	}
	// "required" inside a property is a list in JSON Schema; BFCL's docs
	// sometimes write a flag there.
	if r, ok := p.Get("required"); ok {
		if _, isList := r.([]any); !isList {
			p.Delete("required")
		}
	}
}

// offered returns the offered name of a BFCL function name.
func (c *Case) offered(name string) string {
	for i, f := range c.Functions {
		if f.Value("name") == name {
			return c.offers[i]
		}
	}
	return strings.ReplaceAll(name, ".", "_")
}
