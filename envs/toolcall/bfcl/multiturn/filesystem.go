package multiturn

import (
	"strings"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// fileSystem is BFCL's GorillaFileSystem (gorilla_file_system.py): a tree
// of directories and files, a current directory, and shell-like commands
// on them (ls, cd, mkdir, touch, echo, cat, find, wc, sort, grep, du,
// tail, diff, mv, cp, rm, rmdir, pwd).
//
// The tree is the same object graph as the Python's, sharing included: a
// directory moved by mv shares its contents with the detached original
// (whose children keep it as their parent), and one copied by cp holds
// the very same children as its source, so a later write through either
// shows in both.
//
// Deviations from the Python, all where it has no observable output:
//   - Only _load_scenario(config, long_context=False) is ported: BFCL's
//     base category never loads the long-context padding files, so that
//     data is left out (State still has long_context=False, as vars()
//     does).
//   - Files keep no _last_modified time: it is private, never compared
//     and never shown.
//   - A directory that contains itself (cp of a directory into itself
//     does that) makes Python's find and du recurse until RecursionError;
//     here the cycle is detected and the same error text returned. In
//     State, the repeated directory is a value equal to nothing, as the
//     Python's == of such a tree against a finite ground truth is False.
type fileSystem struct {
	root *fsDir
	cwd  *fsDir
}

func init() { register("GorillaFileSystem", func() Class { return &fileSystem{} }) }

// fsFile is a File: a name and a content (a str, or whatever value a
// model's echo wrote).
type fsFile struct {
	name    string
	content any
}

// fsDir is a Directory. Its entries may be shared with other fsDirs, as
// the Python's contents dict may be.
type fsDir struct {
	name    string
	parent  *fsDir
	entries *fsEntries
}

// fsEntries is a directory's contents: names in insertion order, each a
// *fsFile or a *fsDir.
type fsEntries struct {
	names []string
	items map[string]any
}

func fsNewDir(name string, parent *fsDir) *fsDir {
	return &fsDir{name: name, parent: parent, entries: &fsEntries{items: map[string]any{}}}
}

func (e *fsEntries) has(name string) bool { _, ok := e.items[name]; return ok }

// set is contents[name] = item: a new name goes last, an existing one
// keeps its place.
func (e *fsEntries) set(name string, item any) {
	if !e.has(name) {
		e.names = append(e.names, name)
	}
	e.items[name] = item
}

// pop is contents.pop(name) for a name that is there.
func (e *fsEntries) pop(name string) {
	delete(e.items, name)
	for i, n := range e.names {
		if n == name {
			e.names = append(e.names[:i:i], e.names[i+1:]...)
			return
		}
	}
}

// clone is contents.copy(): a new dict holding the same items.
func (e *fsEntries) clone() *fsEntries {
	c := &fsEntries{names: append([]string(nil), e.names...), items: make(map[string]any, len(e.items))}
	for k, v := range e.items {
		c.items[k] = v
	}
	return c
}

// item is Directory._get_item: "." is the directory itself.
func (d *fsDir) item(name string) any {
	if name == "." {
		return d
	}
	return d.entries.items[name]
}

// addFile is Directory._add_file.
func (d *fsDir) addFile(name string, content any) error {
	if d.entries.has(name) {
		return Raise("File '%s' already exists in directory '%s'.", name, d.name)
	}
	d.entries.set(name, &fsFile{name: name, content: content})
	return nil
}

// addDir is Directory._add_directory; it returns the new directory.
func (d *fsDir) addDir(name string) (*fsDir, error) {
	if d.entries.has(name) {
		return nil, Raise("Directory '%s' already exists in directory '%s'.", name, d.name)
	}
	sub := fsNewDir(name, d)
	d.entries.set(name, sub)
	return sub, nil
}

func (fs *fileSystem) Load(cfg *pyval.Dict) error {
	fs.root = fsNewDir("/", nil)
	if v, ok := cfg.Get("root"); ok {
		top, ok := v.(*pyval.Dict)
		if !ok || top.Len() == 0 {
			return Raise("root is a %s with no first entry", TypeName(v))
		}
		spec, ok := top.Vals[0].(*pyval.Dict)
		if !ok {
			return Raise("root.%s is a %s, not a dict", top.Keys[0], TypeName(top.Vals[0]))
		}
		root := fsNewDir(top.Keys[0], nil)
		if err := fsLoad(root, spec.Value("contents")); err != nil {
			return err
		}
		fs.root = root
	}
	fs.cwd = fs.root
	return nil
}

// fsLoad is _load_directory: it fills dir from a scenario's contents.
func fsLoad(dir *fsDir, contents any) error {
	c, ok := contents.(*pyval.Dict)
	if !ok {
		return Raise("contents of %s is a %s, not a dict", pyval.Quote(dir.name), TypeName(contents))
	}
	for i, name := range c.Keys {
		spec, ok := c.Vals[i].(*pyval.Dict)
		if !ok {
			return Raise("%s is a %s, not a dict", pyval.Quote(name), TypeName(c.Vals[i]))
		}
		switch spec.Value("type") {
		case "directory":
			sub := fsNewDir(name, dir)
			if err := fsLoad(sub, spec.Value("contents")); err != nil {
				return err
			}
			dir.entries.set(name, sub)
		case "file":
			content, ok := spec.Get("content")
			if !ok {
				return KeyError("content")
			}
			dir.entries.set(name, &fsFile{name: name, content: content})
		}
	}
	return nil
}

func (fs *fileSystem) State() *pyval.Dict {
	return dictOf("long_context", false, "root", fsValue(fs.root, nil))
}

// fsCycle stands for a directory met again inside itself: equal to
// nothing (pyval.Eq is false for a type it does not know).
type fsCycle struct{}

func (fsCycle) String() string { return "..." }

// fsValue is a File or Directory as what its __eq__ compares: the name
// and the content, or the name and the contents. above are the entries
// of the directories it lies in.
func fsValue(item any, above []*fsEntries) any {
	d := pyval.NewDict()
	switch t := item.(type) {
	case *fsFile:
		d.Set("name", t.name)
		d.Set("content", t.content)
	case *fsDir:
		for _, e := range above {
			if e == t.entries {
				return fsCycle{}
			}
		}
		above = append(above, t.entries)
		contents := pyval.NewDict()
		for _, n := range t.entries.names {
			contents.Set(n, fsValue(t.entries.items[n], above))
		}
		d.Set("name", t.name)
		d.Set("contents", contents)
	}
	return d
}

// lookup is `name in self._current_dir.contents`, and then the item
// _get_item gives for it.
func (fs *fileSystem) lookup(name any) (any, bool, error) {
	k, ok, err := strKey(name)
	if err != nil || !ok || !fs.cwd.entries.has(k) {
		return nil, false, err
	}
	return fs.cwd.item(k), true, nil
}

// fsValidName is _validate_file_or_directory_name.
func fsValidName(name any) (bool, error) {
	for _, c := range `|/\?%*:"><` {
		in, err := contains(name, string(c))
		if err != nil || in {
			return false, err
		}
	}
	return true, nil
}

// fsLines is content.splitlines(), with the AttributeError of a content
// that is not a str.
func fsLines(content any) ([]string, error) {
	s, ok := content.(string)
	if !ok {
		return nil, noAttr(content, "splitlines")
	}
	var out []string
	start, skip := 0, -1
	for i, r := range s {
		switch {
		case i == skip:
			start = i + 1
			continue
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			skip = i + 1
		case !strings.ContainsRune("\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029", r):
			continue
		}
		out = append(out, s[start:i])
		start = i + utf8.RuneLen(r)
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out, nil
}

// fsWords is len(content.split()).
func fsWords(content any) (int, error) {
	s, ok := content.(string)
	if !ok {
		return 0, noAttr(content, "split")
	}
	return len(strings.FieldsFunc(s, isSpace)), nil
}
