//go:build linux && !cgo

package confine

// census: without cgo there is no census code (census_linux.c), and no
// sandbox either (the init is C): IsChild refuses first.
type census struct {
	Processes, Tasks, Fds                   int64
	Anon, Shmem, FdShm, Tmpfs, Files, Total uint64
	Precise                                 bool
}

const (
	censusTasks   = 1
	censusMemory  = 2
	censusPrecise = 4
)

type censusState struct{}

func newCensusState() *censusState { return &censusState{} }

func (s *censusState) take(outer int, what int, limit int64) (census, bool) {
	return census{Processes: -1}, false
}

func (s *censusState) close() {}
