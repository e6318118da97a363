package multiturn

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nextstate-rl/nextstate/envs/internal/pyval"
)

// The texts of Python's RecursionError where find and du recurse for ever.
const (
	fsFindRecursion = "maximum recursion depth exceeded while calling a Python object"
	fsDuRecursion   = "maximum recursion depth exceeded"
)

func (fs *fileSystem) Methods() []Method {
	return []Method{
		{Name: "pwd", Call: func([]any) (any, error) { return fs.pwd(), nil }},
		{Name: "ls", Params: []Param{Opt("a", false)}, Call: func(a []any) (any, error) { return fs.ls(a[0]), nil }},
		{Name: "cd", Params: []Param{Req("folder")}, Call: func(a []any) (any, error) { return fs.cd(a[0]) }},
		{Name: "mkdir", Params: []Param{Req("dir_name")}, Call: func(a []any) (any, error) { return fs.create("mkdir", "cannot create directory", a[0]) }},
		{Name: "touch", Params: []Param{Req("file_name")}, Call: func(a []any) (any, error) { return fs.create("touch", "cannot touch", a[0]) }},
		{Name: "echo", Params: []Param{Req("content"), Opt("file_name", nil)}, Call: func(a []any) (any, error) { return fs.echo(a[0], a[1]) }},
		{Name: "cat", Params: []Param{Req("file_name")}, Call: func(a []any) (any, error) { return fs.cat(a[0]) }},
		{Name: "find", Params: []Param{Opt("path", "."), Opt("name", nil)}, Call: func(a []any) (any, error) { return fs.find(a[0], a[1]) }},
		{Name: "wc", Params: []Param{Req("file_name"), Opt("mode", "l")}, Call: func(a []any) (any, error) { return fs.wc(a[0], a[1]) }},
		{Name: "sort", Params: []Param{Req("file_name")}, Call: func(a []any) (any, error) { return fs.sort(a[0]) }},
		{Name: "grep", Params: []Param{Req("file_name"), Req("pattern")}, Call: func(a []any) (any, error) { return fs.grep(a[0], a[1]) }},
		{Name: "du", Params: []Param{Opt("human_readable", false)}, Call: func(a []any) (any, error) { return fs.du(a[0]) }},
		{Name: "tail", Params: []Param{Req("file_name"), Opt("lines", int64(10))}, Call: func(a []any) (any, error) { return fs.tail(a[0], a[1]) }},
		{Name: "diff", Params: []Param{Req("file_name1"), Req("file_name2")}, Call: func(a []any) (any, error) { return fs.diff(a[0], a[1]) }},
		{Name: "mv", Params: []Param{Req("source"), Req("destination")}, Call: func(a []any) (any, error) { return fs.mv(a[0], a[1]) }},
		{Name: "rm", Params: []Param{Req("file_name")}, Call: func(a []any) (any, error) { return fs.rm(a[0]) }},
		{Name: "rmdir", Params: []Param{Req("dir_name")}, Call: func(a []any) (any, error) { return fs.rmdir(a[0]) }},
		{Name: "cp", Params: []Param{Req("source"), Req("destination")}, Call: func(a []any) (any, error) { return fs.cp(a[0], a[1]) }},
	}
}

// pwd joins the names from the root down; the root's own name is part of
// the path (a root named "/" gives "//").
func (fs *fileSystem) pwd() *pyval.Dict {
	var names []string
	for d := fs.cwd; d != nil; d = d.parent {
		names = append(names, d.name)
	}
	slices.Reverse(names)
	return dictOf("current_working_directory", "/"+strings.Join(names, "/"))
}

func (fs *fileSystem) ls(all any) *pyval.Dict {
	names := []any{}
	for _, n := range fs.cwd.entries.names {
		if Truthy(all) || !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	return dictOf("current_directory_content", names)
}

func (fs *fileSystem) cd(folder any) (any, error) {
	s, ok := folder.(string)
	if !ok {
		return nil, noAttr(folder, "rstrip")
	}
	s = strings.TrimRight(s, "/")
	if s == "" {
		s = "/"
	}
	switch {
	case s == "..":
		if fs.cwd.parent == nil {
			return errDict("Current directory is already the root. Cannot go back."), nil
		}
		fs.cwd = fs.cwd.parent
		return pyval.NewDict(), nil
	case s != "." && s != "/" && strings.Contains(s, "/"):
		return errDict("cd: " + s + ": Unsupported path. Only one folder level at a time is supported."), nil
	}
	dir, failed, err := fs.navigate(s)
	if failed != nil || err != nil {
		return failed, err
	}
	fs.cwd = dir
	return dictOf("current_working_directory", dir.name), nil
}

// navigate is _navigate_to_directory: the directory at path (None is the
// current one), or the error dict when there is none.
func (fs *fileSystem) navigate(path any) (*fsDir, *pyval.Dict, error) {
	switch path {
	case nil, ".":
		return fs.cwd, nil, nil
	case "/":
		return fs.root, nil, nil
	}
	s, ok := path.(string)
	if !ok {
		return nil, nil, noAttr(path, "strip")
	}
	dir := fs.cwd
	if strings.HasPrefix(s, "/") {
		dir = fs.root
	}
	for _, name := range strings.Split(strings.Trim(s, "/"), "/") {
		next, ok := dir.item(name).(*fsDir)
		if !ok {
			return nil, errDict("cd: '" + s + "': No such file or directory"), nil
		}
		dir = next
	}
	return dir, nil, nil
}

// create is mkdir and touch: cmd is the command, what the failure it reports.
func (fs *fileSystem) create(cmd, what string, name any) (any, error) {
	valid, err := fsValidName(name)
	if err != nil {
		return nil, err
	}
	if !valid {
		return errDict(fmt.Sprintf("%s: %s '%s': Invalid character", cmd, what, Str(name))), nil
	}
	_, exists, err := fs.lookup(name)
	if err != nil {
		return nil, err
	}
	if exists {
		return errDict(fmt.Sprintf("%s: %s '%s': File exists", cmd, what, Str(name))), nil
	}
	k := name.(string) // a name that passed both checks is a str
	if cmd == "mkdir" {
		_, err = fs.cwd.addDir(k)
	} else {
		err = fs.cwd.addFile(k, "")
	}
	return nil, err
}

func (fs *fileSystem) echo(content, fileName any) (any, error) {
	if fileName == nil {
		return dictOf("terminal_output", content), nil
	}
	valid, err := fsValidName(fileName)
	if err != nil {
		return nil, err
	}
	if !valid {
		return errDict("echo: cannot write to '" + Str(fileName) + "': Invalid character"), nil
	}
	if !Truthy(fileName) {
		return dictOf("terminal_output", content), nil
	}
	item, exists, err := fs.lookup(fileName)
	if err != nil {
		return nil, err
	}
	if !exists {
		return errDict("echo: cannot write to '" + Str(fileName) + "': No such file"), nil
	}
	f, ok := item.(*fsFile)
	if !ok {
		return nil, Raise("'Directory' object has no attribute '_write'")
	}
	f.content = content
	return nil, nil
}

func (fs *fileSystem) cat(fileName any) (any, error) {
	valid, err := fsValidName(fileName)
	if err != nil {
		return nil, err
	}
	if !valid {
		return errDict("cat: '" + Str(fileName) + "': Invalid character"), nil
	}
	item, exists, err := fs.lookup(fileName)
	switch {
	case err != nil:
		return nil, err
	case !exists:
		return errDict("cat: '" + Str(fileName) + "': No such file or directory"), nil
	}
	if f, ok := item.(*fsFile); ok {
		return dictOf("file_content", f.content), nil
	}
	return errDict("cat: '" + Str(fileName) + "': Is a directory"), nil
}

func (fs *fileSystem) find(path, name any) (any, error) {
	dir, failed, err := fs.navigate(path)
	if err != nil {
		return nil, err
	}
	if failed != nil {
		msg, _ := failed.Value("error").(string)
		if strings.HasPrefix(msg, "cd:") {
			return errDict("find:" + msg[len("cd:"):]), nil
		}
		return failed, nil
	}
	base, ok := path.(string)
	if !ok {
		return nil, noAttr(path, "rstrip")
	}
	matches := []any{}
	var search func(d *fsDir, base string, above []*fsEntries) error
	search = func(d *fsDir, base string, above []*fsEntries) error {
		if slices.Contains(above, d.entries) {
			return Raise(fsFindRecursion)
		}
		above = append(above, d.entries)
		for _, n := range d.entries.names {
			p := base + "/" + n
			if name == nil {
				matches = append(matches, p)
			} else if in, err := contains(n, name); err != nil {
				return err
			} else if in {
				matches = append(matches, p)
			}
			if sub, ok := d.entries.items[n].(*fsDir); ok {
				if err := search(sub, p, above); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := search(dir, strings.TrimRight(base, "/"), nil); err != nil {
		return nil, err
	}
	return dictOf("matches", matches), nil
}

// file is the File a name of the current directory holds, or nil (a
// missing name, a directory).
func (fs *fileSystem) file(name any) (*fsFile, error) {
	item, _, err := fs.lookup(name)
	f, _ := item.(*fsFile)
	return f, err
}

func (fs *fileSystem) wc(fileName, mode any) (any, error) {
	if mode != "l" && mode != "w" && mode != "c" {
		return errDict("wc: invalid mode '" + Str(mode) + "'"), nil
	}
	f, err := fs.file(fileName)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return errDict("wc: " + Str(fileName) + ": No such file or directory"), nil
	}
	var n int
	unit := "characters"
	switch mode {
	case "l":
		lines, err := fsLines(f.content)
		if err != nil {
			return nil, err
		}
		n, unit = len(lines), "lines"
	case "w":
		if n, err = fsWords(f.content); err != nil {
			return nil, err
		}
		unit = "words"
	default:
		switch t := f.content.(type) {
		case string:
			n = utf8.RuneCountInString(t)
		case []any:
			n = len(t)
		case *pyval.Dict:
			n = t.Len()
		default:
			return nil, Raise("object of type %s has no len()", pyval.Quote(TypeName(t)))
		}
	}
	return dictOf("count", int64(n), "type", unit), nil
}

func (fs *fileSystem) sort(fileName any) (any, error) {
	f, err := fs.file(fileName)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return errDict("sort: " + Str(fileName) + ": No such file or directory"), nil
	}
	lines, err := fsLines(f.content)
	if err != nil {
		return nil, err
	}
	slices.Sort(lines) // UTF-8 byte order is code point order
	return dictOf("sorted_content", strings.Join(lines, "\n")), nil
}

func (fs *fileSystem) grep(fileName, pattern any) (any, error) {
	f, err := fs.file(fileName)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return errDict("grep: " + Str(fileName) + ": No such file or directory"), nil
	}
	lines, err := fsLines(f.content)
	if err != nil {
		return nil, err
	}
	matching := []any{}
	for _, l := range lines {
		in, err := contains(l, pattern)
		if err != nil {
			return nil, err
		}
		if in {
			matching = append(matching, l)
		}
	}
	return dictOf("matching_lines", matching), nil
}

func (fs *fileSystem) du(humanReadable any) (any, error) {
	var size func(item any, above []*fsEntries) (int64, error)
	size = func(item any, above []*fsEntries) (int64, error) {
		switch t := item.(type) {
		case *fsFile:
			s, ok := t.content.(string)
			if !ok {
				return 0, noAttr(t.content, "encode")
			}
			return int64(len(s)), nil
		case *fsDir:
			if slices.Contains(above, t.entries) {
				return 0, Raise(fsDuRecursion)
			}
			above = append(above, t.entries)
			var total int64
			for _, n := range t.entries.names {
				s, err := size(t.entries.items[n], above)
				if err != nil {
					return 0, err
				}
				total += s
			}
			return total, nil
		}
		return 0, nil
	}
	total, err := size(fs.cwd, nil)
	if err != nil {
		return nil, err
	}
	if !Truthy(humanReadable) {
		return dictOf("disk_usage", fmt.Sprintf("%d bytes", total)), nil
	}
	x := float64(total)
	for _, unit := range []string{"B", "KB", "MB", "GB", "TB"} {
		if x < 1024 {
			return dictOf("disk_usage", fmt.Sprintf("%.2f %s", x, unit)), nil
		}
		x /= 1024
	}
	return dictOf("disk_usage", fmt.Sprintf("%.2f PB", x)), nil
}

func (fs *fileSystem) tail(fileName, lines any) (any, error) {
	f, err := fs.file(fileName)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return errDict("tail: " + Str(fileName) + ": No such file or directory"), nil
	}
	content, err := fsLines(f.content)
	if err != nil {
		return nil, err
	}
	n := int64(len(content))
	more, err := Compare(">", lines, n)
	if err != nil {
		return nil, err
	}
	k := n // lines, as content[-lines:] takes it
	if !more {
		switch t := lines.(type) {
		case int64:
			k = t
		case bool:
			k = 0
			if t {
				k = 1
			}
		case *big.Int: // a negative one: content[huge:] is empty
			k = -n - 1
		default:
			return nil, Raise("slice indices must be integers or None or have an __index__ method")
		}
	}
	start := -k
	if start < 0 {
		start = max(start+n, 0)
	}
	start = min(start, n)
	return dictOf("last_lines", strings.Join(content[start:], "\n")), nil
}

func (fs *fileSystem) diff(name1, name2 any) (any, error) {
	missing := errDict("diff: " + Str(name1) + " or " + Str(name2) + ": No such file or directory")
	item1, in1, err := fs.lookup(name1)
	if err != nil || !in1 {
		return fsMissingOr(missing, err)
	}
	item2, in2, err := fs.lookup(name2)
	if err != nil || !in2 {
		return fsMissingOr(missing, err)
	}
	f1, ok1 := item1.(*fsFile)
	f2, ok2 := item2.(*fsFile)
	if !ok1 || !ok2 {
		return missing, nil
	}
	lines1, err := fsLines(f1.content)
	if err != nil {
		return nil, err
	}
	lines2, err := fsLines(f2.content)
	if err != nil {
		return nil, err
	}
	var out []string
	for i := 0; i < len(lines1) && i < len(lines2); i++ {
		if lines1[i] != lines2[i] {
			out = append(out, "- "+lines1[i]+"\n+ "+lines2[i])
		}
	}
	return dictOf("diff_lines", strings.Join(out, "\n")), nil
}

func fsMissingOr(missing *pyval.Dict, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return missing, nil
}

// mv and cp: a source of the current directory goes into a directory
// there, or becomes (mv) or is copied to (cp) a new name there.
func (fs *fileSystem) mv(source, dest any) (any, error) { return fs.transfer("mv", source, dest) }
func (fs *fileSystem) cp(source, dest any) (any, error) { return fs.transfer("cp", source, dest) }

func (fs *fileSystem) transfer(cmd string, source, dest any) (any, error) {
	verb, done := "move", "moved"
	if cmd == "cp" {
		verb, done = "copy", "copied"
	}
	src := Str(source)
	item, exists, err := fs.lookup(source)
	if err != nil {
		return nil, err
	}
	if !exists {
		return errDict(fmt.Sprintf("%s: cannot %s '%s': No such file or directory", cmd, verb, src)), nil
	}
	slash, err := contains(dest, "/")
	if err != nil {
		return nil, err
	}
	if slash {
		return errDict(cmd + ": path not allowed in destination. Provide only a file or directory name."), nil
	}
	target, destExists, err := fs.lookup(dest)
	if err != nil {
		return nil, err
	}
	key := source.(string) // it was found in the contents
	into, name := fs.cwd, ""
	if destExists {
		d, ok := target.(*fsDir)
		if !ok {
			return errDict(fmt.Sprintf("%s: cannot %s '%s' to '%s': Not a directory", cmd, verb, src, Str(dest))), nil
		}
		// mv refuses a name the directory has; cp looks for "dest/source",
		// which is never there, and fails in _add_file or _add_directory.
		if cmd == "mv" && d.entries.has(key) {
			return errDict(fmt.Sprintf("mv: cannot move '%s' to '%s/%s': File exists", src, Str(dest), src)), nil
		}
		into, name = d, key
	} else {
		name = dest.(string) // a hashable value with no "/" in it is a str
	}
	if cmd == "mv" {
		fs.cwd.entries.pop(key)
	}
	switch t := item.(type) {
	case *fsFile:
		err = into.addFile(name, t.content)
	case *fsDir:
		var sub *fsDir
		if sub, err = into.addDir(name); err == nil {
			sub.entries = t.entries
			if cmd == "cp" {
				sub.entries = t.entries.clone()
			}
		}
	}
	if err != nil {
		return nil, err
	}
	to := name
	if destExists {
		to = Str(dest) + "/" + src
	}
	return dictOf("result", fmt.Sprintf("'%s' %s to '%s'", src, done, to)), nil
}

func (fs *fileSystem) rm(fileName any) (any, error) {
	_, exists, err := fs.lookup(fileName)
	if err != nil {
		return nil, err
	}
	if !exists {
		return errDict("rm: cannot remove '" + Str(fileName) + "': No such file or directory"), nil
	}
	fs.cwd.entries.pop(fileName.(string))
	return dictOf("result", "'"+Str(fileName)+"' removed"), nil
}

func (fs *fileSystem) rmdir(dirName any) (any, error) {
	item, exists, err := fs.lookup(dirName)
	if err != nil {
		return nil, err
	}
	name := Str(dirName)
	if !exists {
		return errDict("rmdir: cannot remove '" + name + "': No such file or directory"), nil
	}
	d, ok := item.(*fsDir)
	switch {
	case !ok:
		return errDict("rmdir: cannot remove '" + name + "': Not a directory"), nil
	case len(d.entries.names) > 0:
		return errDict("rmdir: cannot remove '" + name + "': Directory not empty"), nil
	}
	fs.cwd.entries.pop(name)
	return dictOf("result", "'"+name+"' removed"), nil
}
