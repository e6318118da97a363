package train

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

	"github.com/nextstate-rl/nextstate/agent/rundir"
	"github.com/nextstate-rl/nextstate/rl"
)

// AuditFile holds the signal audit: a few trained turns of each step with
// everything that decided their update, a JSON object per line (Audit).
const AuditFile = "audit.jsonl"

// auditPerStep is how many turns each step keeps for the audit: the most
// and least advantaged, and hinted ones.
const auditPerStep = 4

// Audit is one trained turn and the chain that gave it its update: the
// weight version that produced it, the judge's process reward and hint,
// the outcome, the advantage the estimator gave it, and where to read its
// next state (the batch's trajectory file).
type Audit struct {
	Step  int    `json:"step"`
	Task  string `json:"task"`
	Env   string `json:"env"`
	Trial string `json:"trial"`
	Turn  int    `json:"turn"` // the env step, from 1
	// Refused marks an action the gym refused (Turn is then the number of
	// the step after it): its next state is the refusal.
	Refused   bool   `json:"refused,omitempty"`
	Session   string `json:"session"`
	Version   *int   `json:"version"`    // the weight version that produced the reply
	TrainedAt int    `json:"trained_at"` // the version it was trained at
	// Prompt is the context's last message (what the turn answered);
	// Response the reply.
	Prompt   string `json:"prompt"`
	Response string `json:"response"`
	// Reward is the trajectory's mixed score, Outcome its verifier's,
	// Process the judge's score of this turn (null: not judged).
	Reward  float64  `json:"reward"`
	Outcome float64  `json:"outcome"`
	Process *float64 `json:"process"`
	Hint    string   `json:"hint,omitempty"`
	// Advantage is the estimator's, every trained token's before the
	// loss's own terms; Kept false when the step dropped it (a group with
	// nothing to learn). Tokens are the reply's trained tokens.
	Advantage float64 `json:"advantage"`
	Kept      bool    `json:"kept"`
	Tokens    int     `json:"tokens"`
	// Trajectory is the turn's trajectory file, relative to the run
	// directory (its next state is there).
	Trajectory string `json:"trajectory"`
}

// audit picks batch b's turns for the audit and appends them to AuditFile.
func (l *Loop) audit(b, trainedAt int, r rollout, samples []rl.Sample) error {
	if len(samples) == 0 {
		return nil
	}
	adv, err := rl.SampleAdvantages(samples, l.estimator())
	if err != nil {
		return nil // the update says what is wrong with the samples
	}
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(adv[y].Value, adv[x].Value) })
	pick := []int{idx[0], idx[len(idx)-1]}
	for _, i := range idx {
		if s := samples[i].Metadata.OPD; s != nil && len(pick) < auditPerStep && !slices.Contains(pick, i) {
			pick = append(pick, i)
		}
	}
	for _, i := range idx[len(idx)/2:] {
		if len(pick) >= auditPerStep {
			break
		}
		if !slices.Contains(pick, i) {
			pick = append(pick, i)
		}
	}
	rows := map[string]*rundir.Result{}
	for i := range r.rows {
		rows[r.rows[i].Session] = &r.rows[i]
	}
	f, err := os.OpenFile(filepath.Join(l.cfg.Dir, AuditFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, i := range slices.Compact(pick) {
		s := &samples[i]
		a := Audit{Step: b, Task: s.Metadata.Origin.Task, Env: s.Metadata.Origin.Env, Turn: s.Metadata.Origin.Step,
			Refused: s.Metadata.Origin.Refused, Session: s.Metadata.Origin.Session, Version: s.Metadata.Origin.WeightVersion, TrainedAt: trainedAt,
			Response: s.Response, Reward: s.Reward, Outcome: s.Metadata.StepWise.OutcomeReward,
			Advantage: adv[i].Value, Kept: adv[i].Keep}
		if len(s.Prompt) > 0 {
			a.Prompt = s.Prompt[len(s.Prompt)-1].Content
		}
		if s.Metadata.Origin.Judged && len(s.Metadata.StepWise.StepScores) > 0 {
			p := s.Metadata.StepWise.StepScores[0]
			a.Process = &p
		}
		if s.Metadata.OPD != nil {
			a.Hint = s.Metadata.OPD.Hint
		}
		for _, m := range s.LossMask {
			a.Tokens += m
		}
		if row := rows[a.Session]; row != nil {
			a.Trial = row.TrialID
			if row.Trajectory != "" {
				a.Trajectory = filepath.ToSlash(filepath.Join("rollouts", filepath.Base(l.batchDir(b)), row.Trajectory))
			}
		}
		line, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// estimator is the advantage estimator's name, as trainer/service reads it.
func (l *Loop) estimator() string {
	if l.cfg.Estimator == "" {
		return rl.EstimatorGRPO
	}
	return l.cfg.Estimator
}
