package tau2

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// EachMember calls fn for each member of the JSON object data, in order
// (Python keeps a dict's order; Go's maps do not).
func EachMember(data []byte, fn func(key string, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want a JSON object, got %v", t)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if err := fn(t.(string), raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("text after the JSON object")
	}
	return nil
}
