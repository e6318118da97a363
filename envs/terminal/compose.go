package terminal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// MainService is the docker-compose service Terminal-Bench runs the agent
// in: its build is the task's image.
const MainService = "client"

// taskBuild is where a task's image is built from: the build context, a
// folder of the task (slash-separated, "." for the task folder itself),
// and the Dockerfile, relative to the task folder. Without a
// docker-compose file, or with one whose main service builds the task
// folder's Dockerfile, it is {".", "Dockerfile"}.
type taskBuild struct {
	Context    string
	Dockerfile string
	// Unsupported says what of the compose file the task needs and
	// nextstate does not do (other services, build arguments); empty
	// when nothing. A task with any is refused at reset, saying so.
	Unsupported []string
}

// dockerfileIn is the Dockerfile's name inside the build context.
func (b taskBuild) dockerfileIn() string {
	if b.Context == "." {
		return b.Dockerfile
	}
	return strings.TrimPrefix(b.Dockerfile, b.Context+"/")
}

// contextFS is the build context within the task's files.
func (b taskBuild) contextFS(files fs.FS) (fs.FS, error) {
	if b.Context == "." {
		return files, nil
	}
	return fs.Sub(files, b.Context)
}

// composeFiles are the names Terminal-Bench's compose file may have.
var composeFiles = []string{"docker-compose.yaml", "docker-compose.yml"}

// readTaskBuild reads where the task's image is built from: the main
// service's build of docker-compose.yaml (or .yml) when the task has one
// (the service "client", as Terminal-Bench names it, or the only
// service), else the task folder's Dockerfile.
//
// Of the compose file, only the main service's build (a context string,
// or {context, dockerfile}) is read. Its image, container_name, command,
// environment, volumes, ports and the like are ignored: nextstate makes
// the sandbox itself, sets TEST_DIR, and keeps logs its own way. Other
// services are not started, and build args, target and the like are not
// passed: a task that has them is marked Unsupported.
func readTaskBuild(files fs.FS) (taskBuild, error) {
	def := taskBuild{Context: ".", Dockerfile: "Dockerfile"}
	var name string
	var b []byte
	for _, n := range composeFiles {
		var err error
		if b, err = fs.ReadFile(files, n); err == nil {
			name = n
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return def, err
		}
	}
	if name == "" {
		return def, nil
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return def, fmt.Errorf("%s is not YAML: %w", name, err)
	}
	var file struct {
		Services map[string]struct {
			Build json.RawMessage `json:"build"`
			Image string          `json:"image"`
		} `json:"services"`
	}
	if err := json.Unmarshal(j, &file); err != nil {
		return def, fmt.Errorf("%s: %w", name, err)
	}
	if len(file.Services) == 0 {
		return def, nil // no services: the Dockerfile beside it is the image
	}
	main := MainService
	if _, ok := file.Services[main]; !ok {
		if len(file.Services) != 1 {
			return def, fmt.Errorf("%s: %d services and none named %q: nextstate runs the agent in the %q service, as Terminal-Bench does",
				name, len(file.Services), MainService, MainService)
		}
		for s := range file.Services {
			main = s
		}
	}
	var others []string
	for s := range file.Services {
		if s != main {
			others = append(others, s)
		}
	}
	sort.Strings(others)
	var out taskBuild
	if len(others) > 0 {
		out.Unsupported = append(out.Unsupported, fmt.Sprintf("services other than %q (%s) are not started", main, strings.Join(others, ", ")))
	}
	svc := file.Services[main]
	ctxDir, dockerfile := "", ""
	switch raw := strings.TrimSpace(string(svc.Build)); {
	case raw == "" || raw == "null":
		if svc.Image != "" {
			return def, fmt.Errorf("%s: service %q has no build, only image %q: nextstate builds a task's image, it pulls none", name, main, svc.Image)
		}
	case raw[0] == '"':
		if err := json.Unmarshal(svc.Build, &ctxDir); err != nil {
			return def, fmt.Errorf("%s: service %q: build: %w", name, main, err)
		}
	default:
		var bld map[string]json.RawMessage
		if err := json.Unmarshal(svc.Build, &bld); err != nil {
			return def, fmt.Errorf("%s: service %q: build: want a context or {context, dockerfile}: %w", name, main, err)
		}
		var extra []string
		for k, v := range bld {
			var s string
			switch k {
			case "context", "dockerfile":
				if err := json.Unmarshal(v, &s); err != nil {
					return def, fmt.Errorf("%s: service %q: build.%s: want a string", name, main, k)
				}
				if k == "context" {
					ctxDir = s
				} else {
					dockerfile = s
				}
			default:
				extra = append(extra, "build."+k)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			out.Unsupported = append(out.Unsupported, strings.Join(extra, ", ")+" of service "+main+" are not applied")
		}
	}
	if ctxDir = strings.TrimSpace(ctxDir); ctxDir == "" {
		ctxDir = "."
	}
	if strings.Contains(ctxDir, "://") || strings.HasPrefix(ctxDir, "git@") {
		return def, fmt.Errorf("%s: service %q: build context %q is remote: only a folder of the task is supported", name, main, ctxDir)
	}
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	out.Context = path.Clean(strings.TrimPrefix(ctxDir, "./"))
	out.Dockerfile = path.Join(out.Context, dockerfile)
	inside := out.Context == "." || strings.HasPrefix(out.Dockerfile, out.Context+"/")
	if path.IsAbs(ctxDir) || path.IsAbs(dockerfile) || !fs.ValidPath(out.Context) || !fs.ValidPath(out.Dockerfile) || !inside {
		return def, fmt.Errorf("%s: service %q: build context %q and dockerfile %q must be inside the task folder", name, main, ctxDir, dockerfile)
	}
	if _, err := fs.Stat(files, out.Dockerfile); err != nil {
		return def, fmt.Errorf("%s: service %q builds %s, which is missing: %w", name, main, out.Dockerfile, err)
	}
	return out, nil
}
