package train

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nextstate-rl/nextstate/internal/jsonfile"
)

// StateFile is the run directory's record of where the run stands.
const StateFile = "state.json"

// State is what StateFile holds: the steps whose samples were consumed
// and whose result a saved training state holds.
type State struct {
	// Steps are the batches trained and saved: a rerun starts at Steps+1.
	Steps int `json:"steps"`
	// OptimizerSteps are the optimizer steps the saved state took (a batch
	// with nothing to learn takes none).
	OptimizerSteps int `json:"optimizer_steps"`
	// TrainingState is the folder save_state wrote.
	TrainingState string `json:"training_state"`
	// Settings are the run's settings that a resumed run must share.
	Settings Settings  `json:"settings"`
	Updated  time.Time `json:"updated"`
}

// Settings are what decides a run's batches and updates: a rerun of the
// same directory with others is refused.
type Settings struct {
	Run       string             `json:"run"`
	Seed      int64              `json:"seed"`
	GroupSize int                `json:"group_size"`
	Groups    int                `json:"groups"`
	Tasks     []string           `json:"tasks"`
	Mix       map[string]float64 `json:"mix,omitempty"`
	Loss      json.RawMessage    `json:"loss"`
	Estimator string             `json:"estimator,omitempty"`
}

// readState reads dir's StateFile; none is a zero State and no error.
func readState(dir string) (State, error) {
	var st State
	_, err := jsonfile.Read(filepath.Join(dir, StateFile), &st)
	return st, err
}

// writeState writes st whole (jsonfile.WriteAtomic).
func writeState(dir string, st State) error {
	st.Updated = time.Now().UTC()
	return jsonfile.WriteAtomic(filepath.Join(dir, StateFile), st)
}

// diff names the first setting in which b differs from a, "" when none.
func (a Settings) diff(b Settings) string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) == string(jb) {
		return ""
	}
	var ma, mb map[string]json.RawMessage
	json.Unmarshal(ja, &ma)
	json.Unmarshal(jb, &mb)
	for _, k := range sortedKeys(ma) {
		if string(ma[k]) != string(mb[k]) {
			return fmt.Sprintf("%s: %s before, %s now", k, ma[k], mb[k])
		}
	}
	for _, k := range sortedKeys(mb) {
		if _, ok := ma[k]; !ok {
			return fmt.Sprintf("%s: none before, %s now", k, mb[k])
		}
	}
	return "the settings"
}
