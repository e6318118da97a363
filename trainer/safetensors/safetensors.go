// Package safetensors reads and writes the safetensors format of Hugging Face
// checkpoints: an 8-byte little-endian header length, a JSON header naming
// each tensor's dtype, shape and byte range, then the raw little-endian data.
// A model folder holds one model.safetensors, or shards listed by
// model.safetensors.index.json ({"metadata": {...}, "weight_map": {name: file}});
// OpenDir reads either, and WriteDir writes either.
//
// Elements are F32, F16 or BF16 on disk and float32 in memory: reads widen
// exactly, writes round to nearest even. A File is safe for concurrent
// reads; it reads each tensor with ReadAt and never maps the whole file.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// MaxHeader bounds the JSON header read from a file (100 MB, as upstream).
const MaxHeader = 100 << 20

// ErrNotFound is returned, wrapped, for a tensor name a file or folder lacks.
var ErrNotFound = errors.New("safetensors: tensor not found")

// Info describes one tensor in a file.
type Info struct {
	DType   DType    `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"` // byte range relative to the data section
}

// Elems is the product of the shape (1 for a scalar).
func (i Info) Elems() int {
	n := 1
	for _, d := range i.Shape {
		n *= d
	}
	return n
}

// File is one open safetensors file.
type File struct {
	Path     string
	Metadata map[string]string
	tensors  map[string]Info
	f        *os.File
	data     int64 // offset of the data section
}

// Open reads and checks the header of a safetensors file.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	sf, err := parseHeader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sf.Path = path
	return sf, nil
}

func parseHeader(f *os.File, size int64) (*File, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("safetensors: short header: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeader || int64(n) > size-8 {
		return nil, fmt.Errorf("safetensors: header length %d out of range", n)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("safetensors: short header: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	sf := &File{f: f, data: 8 + int64(n), tensors: make(map[string]Info, len(raw))}
	dataLen := size - sf.data
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &sf.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__: %w", err)
			}
			continue
		}
		var info Info
		if err := json.Unmarshal(msg, &info); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		b, e := info.Offsets[0], info.Offsets[1]
		if b < 0 || e < b || e > dataLen {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d,%d] outside the %d data bytes", name, b, e, dataLen)
		}
		if sz := info.DType.Size(); sz != 0 && int64(info.Elems()*sz) != e-b {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, has %d", name, info.Shape, info.DType, info.Elems()*sz, e-b)
		}
		sf.tensors[name] = info
	}
	return sf, nil
}

// Names lists the tensors in the file, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.tensors))
	for n := range f.tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Info describes the named tensor.
func (f *File) Info(name string) (Info, bool) {
	i, ok := f.tensors[name]
	return i, ok
}

// ReadFloat32 reads the named tensor into dst, which must have exactly its
// number of elements, widening F16 and BF16.
func (f *File) ReadFloat32(name string, dst []float32) error {
	info, ok := f.tensors[name]
	if !ok {
		return fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.Path)
	}
	if info.DType.Size() == 0 {
		return fmt.Errorf("safetensors: tensor %q: dtype %s is not supported (F32, F16, BF16)", name, info.DType)
	}
	if len(dst) != info.Elems() {
		return fmt.Errorf("safetensors: tensor %q has %d elements (shape %v), destination %d", name, info.Elems(), info.Shape, len(dst))
	}
	raw := make([]byte, info.Offsets[1]-info.Offsets[0])
	if _, err := f.f.ReadAt(raw, f.data+info.Offsets[0]); err != nil {
		return fmt.Errorf("safetensors: reading %q: %w", name, err)
	}
	return decode(dst, raw, info.DType)
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Tensor is one tensor to write, stored as DType: f32 Data in memory or,
// when Data is nil, a Fill that writes its values into a buffer of the
// shape's size when the writer needs them (so that weights held elsewhere,
// on a device, are copied one tensor at a time).
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []float32
	Fill  func(dst []float32)
}

// elems is the number of elements of the tensor's shape.
func (t Tensor) elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Write writes tensors to path as one safetensors file, in the order given
// (the data section is aligned to 8 bytes, as upstream writers do).
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	hdr := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		sz := t.DType.Size()
		if sz == 0 {
			return fmt.Errorf("safetensors: tensor %q: dtype %q is not supported", t.Name, t.DType)
		}
		n := t.elems()
		if t.Data == nil && t.Fill == nil {
			return fmt.Errorf("safetensors: tensor %q has neither Data nor Fill", t.Name)
		}
		if t.Data != nil && n != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: shape %v has %d elements, data %d", t.Name, t.Shape, n, len(t.Data))
		}
		if _, dup := hdr[t.Name]; dup || t.Name == "" {
			return fmt.Errorf("safetensors: tensor name %q empty or repeated", t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[t.Name] = Info{DType: t.DType, Shape: shape, Offsets: [2]int64{off, off + int64(n*sz)}}
		off += int64(n * sz)
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	if _, err := f.Write(lenBuf[:]); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(js); err != nil {
		f.Close()
		return err
	}
	var buf []byte
	var vals []float32
	for _, t := range tensors {
		data := t.Data
		if data == nil {
			if cap(vals) < t.elems() {
				vals = make([]float32, t.elems())
			}
			data = vals[:t.elems()]
			t.Fill(data)
		}
		need := len(data) * t.DType.Size()
		if cap(buf) < need {
			buf = make([]byte, need)
		}
		buf = buf[:need]
		encode(buf, data, t.DType)
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Single and Index are the file names of a model folder's weights.
const (
	Single = "model.safetensors"
	Index  = "model.safetensors.index.json"
)

// IndexFile is the JSON of model.safetensors.index.json.
type IndexFile struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// Dir is the weights of a model folder: one file or several shards.
type Dir struct {
	files  map[string]*File // by file name
	byName map[string]*File // by tensor name
}

// OpenDir opens dir's model.safetensors.index.json and its shards if the index
// exists, else dir's model.safetensors.
func OpenDir(dir string) (*Dir, error) {
	d := &Dir{files: map[string]*File{}, byName: map[string]*File{}}
	js, err := os.ReadFile(filepath.Join(dir, Index))
	switch {
	case err == nil:
		var idx IndexFile
		if err := json.Unmarshal(js, &idx); err != nil {
			return nil, fmt.Errorf("safetensors: %s: %w", Index, err)
		}
		for name, file := range idx.WeightMap {
			if filepath.Base(file) != file {
				d.Close()
				return nil, fmt.Errorf("safetensors: %s: shard %q is not a file name in the folder", Index, file)
			}
			sf := d.files[file]
			if sf == nil {
				if sf, err = Open(filepath.Join(dir, file)); err != nil {
					d.Close()
					return nil, err
				}
				d.files[file] = sf
			}
			if _, ok := sf.tensors[name]; !ok {
				d.Close()
				return nil, fmt.Errorf("%w: %q listed in %s for %s", ErrNotFound, name, Index, file)
			}
			d.byName[name] = sf
		}
	case errors.Is(err, os.ErrNotExist):
		sf, err := Open(filepath.Join(dir, Single))
		if err != nil {
			return nil, err
		}
		d.files[Single] = sf
		for name := range sf.tensors {
			d.byName[name] = sf
		}
	default:
		return nil, err
	}
	return d, nil
}

// Names lists every tensor in the folder, sorted.
func (d *Dir) Names() []string {
	names := make([]string, 0, len(d.byName))
	for n := range d.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Info describes the named tensor.
func (d *Dir) Info(name string) (Info, bool) {
	f, ok := d.byName[name]
	if !ok {
		return Info{}, false
	}
	return f.Info(name)
}

// ReadFloat32 reads the named tensor from whichever shard holds it.
func (d *Dir) ReadFloat32(name string, dst []float32) error {
	f, ok := d.byName[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return f.ReadFloat32(name, dst)
}

// Close closes every shard.
func (d *Dir) Close() error {
	var first error
	for _, f := range d.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WriteDir writes tensors into dir as model.safetensors when they fit in
// maxShard bytes (or maxShard <= 0), else as shards named
// model-00001-of-0000N.safetensors with an index, in the order given.
func WriteDir(dir string, tensors []Tensor, maxShard int64) error {
	var shards [][]Tensor
	var cur []Tensor
	var curSize, total int64
	for _, t := range tensors {
		sz := int64(t.elems() * t.DType.Size())
		if maxShard > 0 && len(cur) > 0 && curSize+sz > maxShard {
			shards = append(shards, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, t)
		curSize += sz
		total += sz
	}
	shards = append(shards, cur)
	meta := map[string]string{"format": "pt"}
	os.Remove(filepath.Join(dir, Index))
	if len(shards) == 1 {
		return Write(filepath.Join(dir, Single), tensors, meta)
	}
	os.Remove(filepath.Join(dir, Single))
	idx := IndexFile{Metadata: map[string]any{"total_size": total}, WeightMap: map[string]string{}}
	for i, sh := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := Write(filepath.Join(dir, name), sh, meta); err != nil {
			return err
		}
		for _, t := range sh {
			idx.WeightMap[t.Name] = name
		}
	}
	js, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, Index), append(js, '\n'), 0o644)
}
