"""Renders tokenizer_config.json's chat_template with Jinja2 as Hugging Face
transformers does (trim_blocks, lstrip_blocks, loopcontrols, a sandbox, and
tojson as json.dumps(ensure_ascii=False)). Reads {"config": PATH, "cases":
[{"messages": [...], "tools": [...] | null, "add_generation_prompt": bool,
"enable_thinking": bool | null}]} on stdin; prints the rendered strings as JSON."""
import json
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


req = json.load(sys.stdin)
cfg = json.load(open(req["config"]))
env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
tmpl = env.from_string(cfg["chat_template"])
out = []
for c in req["cases"]:
    kw = {"messages": c["messages"], "tools": c.get("tools"), "add_generation_prompt": c.get("add_generation_prompt", False)}
    if c.get("enable_thinking") is not None:
        kw["enable_thinking"] = c["enable_thinking"]
    out.append(tmpl.render(**kw))
print(json.dumps(out))
