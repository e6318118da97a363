package trainer

import (
	"errors"
	"fmt"
)

// Batch is the input of a training or scoring pass: sequences packed one
// after another with no padding, each attending only to itself (causal
// within the sequence, its first token at position 0), and the rows whose
// next-token distribution is scored.
type Batch struct {
	Seqs [][]int32
	// Rows are the scored rows; nil scores every position but the last of
	// every sequence.
	Rows []Row
	// K is the number of ids scored per row (0 means 1).
	K int
	// Targets are the ids scored at each row, [len(Rows)·K] row-major; nil
	// means each row's next token (K must be 1).
	Targets []int32
}

// Row is position Pos of sequence Seq: its distribution over the next
// token is scored.
type Row struct{ Seq, Pos int }

// NextTokenBatch scores, in each sequence, the positions whose next token
// has mask[t+1] set (mask nil: every next token): the loss mask of a
// sample, where only the response's tokens are trained on.
func NextTokenBatch(seqs [][]int32, masks [][]bool) *Batch {
	b := &Batch{Seqs: seqs}
	for s, seq := range seqs {
		for t := 0; t+1 < len(seq); t++ {
			if masks == nil || masks[s] == nil || masks[s][t+1] {
				b.Rows = append(b.Rows, Row{s, t})
			}
		}
	}
	if b.Rows == nil {
		b.Rows = []Row{}
	}
	return b
}

// packed is a batch resolved against a vocabulary: the token ids of all
// rows, the global row of each scored row, and the targets.
type packed struct {
	tokens  []int32
	starts  []int // first row of each sequence
	rows    []int32
	targets []int32
	K       int
	maxLen  int
}

func (b *Batch) pack(V int) (*packed, error) {
	if len(b.Seqs) == 0 {
		return nil, errors.New("trainer: batch: no sequences")
	}
	p := &packed{K: max(b.K, 1)}
	for i, s := range b.Seqs {
		if len(s) == 0 {
			return nil, fmt.Errorf("trainer: batch: sequence %d is empty", i)
		}
		for _, t := range s {
			if t < 0 || int(t) >= V {
				return nil, fmt.Errorf("trainer: batch: sequence %d: token %d outside the vocabulary [0,%d)", i, t, V)
			}
		}
		p.starts = append(p.starts, len(p.tokens))
		p.tokens = append(p.tokens, s...)
		p.maxLen = max(p.maxLen, len(s))
	}
	rows := b.Rows
	if rows == nil {
		for s, seq := range b.Seqs {
			for t := 0; t+1 < len(seq); t++ {
				rows = append(rows, Row{s, t})
			}
		}
	}
	if b.Targets == nil && p.K != 1 {
		return nil, fmt.Errorf("trainer: batch: K = %d needs Targets", p.K)
	}
	if b.Targets != nil && len(b.Targets) != len(rows)*p.K {
		return nil, fmt.Errorf("trainer: batch: %d targets for %d rows of %d", len(b.Targets), len(rows), p.K)
	}
	for i, r := range rows {
		if r.Seq < 0 || r.Seq >= len(b.Seqs) || r.Pos < 0 || r.Pos >= len(b.Seqs[r.Seq]) {
			return nil, fmt.Errorf("trainer: batch: row %d (sequence %d, position %d) is outside the batch", i, r.Seq, r.Pos)
		}
		if b.Targets == nil && r.Pos+1 >= len(b.Seqs[r.Seq]) {
			return nil, fmt.Errorf("trainer: batch: row %d is the last of sequence %d: it has no next token; give Targets", i, r.Seq)
		}
		p.rows = append(p.rows, int32(p.starts[r.Seq]+r.Pos))
	}
	if b.Targets != nil {
		p.targets = b.Targets
		for _, t := range p.targets {
			if t < 0 || int(t) >= V {
				return nil, fmt.Errorf("trainer: batch: target %d outside the vocabulary [0,%d)", t, V)
			}
		}
	} else {
		p.targets = make([]int32, len(p.rows))
		for i, r := range p.rows {
			p.targets[i] = p.tokens[r+1]
		}
	}
	return p, nil
}
