package gitstate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
)

// Snapshot is a git directory's state when a sandbox starts: the base of
// the three-way comparison Adopt makes.
type Snapshot struct {
	ObjectFormat string            // "sha1" or "sha256"
	Loose        map[string]string // loose refs and pseudo-refs (HEAD, ...) with their values
	Packed       map[string]string // packed-refs entries
	Index        FileID            // the index file
	Config       []byte            // the config file's bytes (nil when absent)
	ConfigHash   [32]byte          // SHA-256 of Config
	HasConfig    bool
}

// FileID identifies a file's content and inode at one moment.
type FileID struct {
	Present  bool
	Dev, Ino uint64
	Size     int64
	Mtime    int64 // nanoseconds
	Hash     [32]byte
}

// Refs is the effective value of every ref: a loose ref wins over a packed
// one, as in git.
func (s *Snapshot) Refs() map[string]string {
	return mergeRefs(s.Packed, s.Loose)
}

func mergeRefs(packed, loose map[string]string) map[string]string {
	out := make(map[string]string, len(packed)+len(loose))
	for k, v := range packed {
		out[k] = v
	}
	for k, v := range loose {
		out[k] = v
	}
	return out
}

// snapshotMagic starts a marshalled Snapshot; the version is in it.
var snapshotMagic = []byte("jail-gitstate-snapshot-1\n")

// MarshalBinary encodes the snapshot (for a supervisor that keeps it
// across a re-exec or hands it to another process).
func (s *Snapshot) MarshalBinary() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("gitstate: marshal snapshot: %w", err)
	}
	return append(append([]byte{}, snapshotMagic...), b...), nil
}

// UnmarshalSnapshot decodes what MarshalBinary made, checking that every
// ref name and value in it is one Take could have produced.
func UnmarshalSnapshot(data []byte) (*Snapshot, error) {
	rest, ok := bytes.CutPrefix(data, snapshotMagic)
	if !ok {
		return nil, errors.New("gitstate: unmarshal snapshot: not a snapshot of this version")
	}
	var s Snapshot
	if err := json.Unmarshal(rest, &s); err != nil {
		return nil, fmt.Errorf("gitstate: unmarshal snapshot: %w", err)
	}
	hexLen := 40
	switch s.ObjectFormat {
	case "sha1":
	case "sha256":
		hexLen = 64
	default:
		return nil, fmt.Errorf("gitstate: unmarshal snapshot: object format %s", esc(s.ObjectFormat))
	}
	for _, m := range []map[string]string{s.Loose, s.Packed} {
		for k, v := range m {
			if !validRefName(k) && !isPseudoRef(k) {
				return nil, fmt.Errorf("gitstate: unmarshal snapshot: ref name %s", esc(k))
			}
			if _, err := parseRefValue(k, []byte(v), hexLen); err != nil {
				return nil, fmt.Errorf("gitstate: unmarshal snapshot: ref %s: %w", esc(k), err)
			}
		}
	}
	if s.Loose == nil {
		s.Loose = map[string]string{}
	}
	if s.Packed == nil {
		s.Packed = map[string]string{}
	}
	if s.HasConfig && sha256.Sum256(s.Config) != s.ConfigHash {
		return nil, errors.New("gitstate: unmarshal snapshot: config hash mismatch")
	}
	return &s, nil
}
