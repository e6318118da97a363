package gym

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestFingerprintIsJSON holds the step log's fingerprint to the action's
// JSON form, which it stands for: on generated actions, two fingerprints
// are equal exactly when the two actions encode to the same JSON.
func TestFingerprintIsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var acts []Action
	for range 400 {
		acts = append(acts, randomAction(r))
	}
	for i := range acts {
		ai, _ := json.Marshal(acts[i])
		fi := acts[i].fingerprint()
		for j := range acts {
			aj, _ := json.Marshal(acts[j])
			if same := bytes.Equal(ai, aj); same != (fi == acts[j].fingerprint()) {
				t.Fatalf("%s and %s: same JSON %v, same fingerprint %v", ai, aj, same, !same)
			}
		}
	}
}

// TestFingerprintSeesEveryField sets each field of a Part, and of what it
// points to, one at a time: each changes the fingerprint, as it changes the
// JSON. A field added to Part without going into appendPart fails here.
func TestFingerprintSeesEveryField(t *testing.T) {
	base := Action{Parts: []Part{{}}}
	seen := map[[32]byte]string{base.fingerprint(): "the zero part"}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+"."+v.Type().Field(i).Name
			switch f.Kind() {
			case reflect.Struct:
				walk(f, name)
				continue
			case reflect.Pointer:
				if f.Type().Elem().Kind() == reflect.Struct {
					f.Set(reflect.New(f.Type().Elem()))
					check(t, seen, base, name+" (set, zero)")
					walk(f.Elem(), name)
					f.Set(reflect.Zero(f.Type()))
					continue
				}
				f.Set(reflect.New(f.Type().Elem()))
				check(t, seen, base, name+" (set, zero)")
				f.Elem().SetInt(7)
			case reflect.String:
				f.SetString("x")
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int, reflect.Int64:
				f.SetInt(7)
			case reflect.Slice:
				f.SetBytes([]byte{7})
			default:
				t.Fatalf("%s: a %s; teach this test and appendPart about it", name, f.Kind())
			}
			check(t, seen, base, name)
			f.Set(reflect.Zero(f.Type()))
		}
	}
	walk(reflect.ValueOf(&base.Parts[0]).Elem(), "Part")
	if base.fingerprint() != (&Action{Parts: []Part{{}}}).fingerprint() {
		t.Fatal("the walk left a field set")
	}
	if (&Action{}).fingerprint() == (&Action{Parts: []Part{{}}}).fingerprint() {
		t.Fatal("no part and one empty part have the same fingerprint")
	}
}

// check records a's fingerprint under what, failing if another variant
// had it.
func check(t *testing.T, seen map[[32]byte]string, a Action, what string) {
	t.Helper()
	fp := a.fingerprint()
	if other, ok := seen[fp]; ok {
		raw, _ := json.Marshal(a)
		t.Fatalf("%s has the fingerprint of %s (JSON %s)", what, other, raw)
	}
	seen[fp] = what
}

func BenchmarkFingerprint(b *testing.B) {
	a := TextAction("ls -la /tmp")
	b.ReportAllocs()
	for b.Loop() {
		a.fingerprint()
	}
}
