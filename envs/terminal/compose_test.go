package terminal

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadTaskBuild(t *testing.T) {
	df := &fstest.MapFile{Data: []byte("FROM nextstate/base\n")}
	for _, c := range []struct {
		name, compose        string
		files                fstest.MapFS
		context, dockerfile  string
		unsupported, errWant string
	}{
		{name: "no compose file", files: fstest.MapFS{"Dockerfile": df}, context: ".", dockerfile: "Dockerfile"},
		{name: "the task folder", compose: "services:\n  client:\n    build:\n      dockerfile: Dockerfile\n    image: x\n",
			files: fstest.MapFS{"Dockerfile": df}, context: ".", dockerfile: "Dockerfile"},
		{name: "a subfolder context", compose: "services:\n  client:\n    build:\n      context: ./client\n      dockerfile: Dockerfile\n",
			files: fstest.MapFS{"client/Dockerfile": df}, context: "client", dockerfile: "client/Dockerfile"},
		{name: "a context string", compose: "services:\n  client:\n    build: env\n", files: fstest.MapFS{"env/Dockerfile": df},
			context: "env", dockerfile: "env/Dockerfile"},
		{name: "a Dockerfile in a subfolder of the folder", compose: "services:\n  client:\n    build:\n      context: .\n      dockerfile: docker/Dockerfile.agent\n",
			files: fstest.MapFS{"docker/Dockerfile.agent": df}, context: ".", dockerfile: "docker/Dockerfile.agent"},
		{name: "the only service", compose: "services:\n  main:\n    build: app\n", files: fstest.MapFS{"app/Dockerfile": df},
			context: "app", dockerfile: "app/Dockerfile"},
		{name: "another service", compose: "services:\n  client:\n    build: .\n  db:\n    image: postgres\n",
			files: fstest.MapFS{"Dockerfile": df}, context: ".", dockerfile: "Dockerfile", unsupported: `services other than "client" (db) are not started`},
		{name: "build args", compose: "services:\n  client:\n    build:\n      context: .\n      args:\n        V: 1\n",
			files: fstest.MapFS{"Dockerfile": df}, context: ".", dockerfile: "Dockerfile", unsupported: "build.args of service client are not applied"},
		{name: "no client among many", compose: "services:\n  a:\n    build: .\n  b:\n    build: .\n", files: fstest.MapFS{"Dockerfile": df},
			errWant: `none named "client"`},
		{name: "a missing Dockerfile", compose: "services:\n  client:\n    build: client\n", files: fstest.MapFS{"Dockerfile": df},
			errWant: "builds client/Dockerfile, which is missing"},
		{name: "outside the folder", compose: "services:\n  client:\n    build: ../elsewhere\n", files: fstest.MapFS{"Dockerfile": df},
			errWant: "must be inside the task folder"},
		{name: "a Dockerfile outside its context", compose: "services:\n  client:\n    build:\n      context: client\n      dockerfile: ../Dockerfile\n",
			files: fstest.MapFS{"Dockerfile": df, "client/x": df}, errWant: "must be inside the task folder"},
		{name: "an image only", compose: "services:\n  client:\n    image: ubuntu\n", files: fstest.MapFS{}, errWant: "it pulls none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.compose != "" {
				c.files["docker-compose.yaml"] = &fstest.MapFile{Data: []byte(c.compose)}
			}
			b, err := readTaskBuild(c.files)
			if c.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), c.errWant) {
					t.Fatalf("got %+v, %v; want an error with %q", b, err, c.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Context != c.context || b.Dockerfile != c.dockerfile || strings.Join(b.Unsupported, "; ") != c.unsupported {
				t.Errorf("got %+v; want context %q, dockerfile %q, unsupported %q", b, c.context, c.dockerfile, c.unsupported)
			}
		})
	}
}
