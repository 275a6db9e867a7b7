package tool

import (
	"sync"
	"time"
)

// Env is the world a tool call runs in. The engine owns it; tools read it
// and update the working directory and the read state.
type Env struct {
	// ProjectDir is the project's root; paths outside it are "outside the
	// project" for permissions.
	ProjectDir string
	// SessionDir is the session's sidecar folder (<project>/<sessionId>/),
	// where large results are kept.
	SessionDir string
	// Now is the clock.
	Now func() time.Time
	// Files remembers what the model has read, for read-before-edit.
	Files *FileState
	// BeforeChange is called with a file's absolute path before a tool
	// changes or creates it, so its prior content can be backed up (file
	// history). An error stops the change. May be nil.
	BeforeChange func(path string) error

	mu  sync.Mutex
	cwd string
}

// NewEnv returns an environment whose working directory is cwd.
func NewEnv(cwd string) *Env {
	return &Env{ProjectDir: cwd, cwd: cwd, Now: time.Now, Files: NewFileState()}
}

// Cwd returns the working directory.
func (e *Env) Cwd() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cwd
}

// SetCwd changes the working directory (a shell's cd carries over).
func (e *Env) SetCwd(dir string) {
	e.mu.Lock()
	e.cwd = dir
	e.mu.Unlock()
}

// FileState is what the model last saw of each file: a file must be read
// before it is edited, and an edit fails if the file changed on disk since
// (SPEC F5). Safe for concurrent use.
type FileState struct {
	mu    sync.Mutex
	files map[string]FileSeen
}

// FileSeen is one file as the model last saw it.
type FileSeen struct {
	ModTime time.Time
	Size    int64
	// Partial is set when only part of the file was read.
	Partial bool
}

// NewFileState returns an empty read state.
func NewFileState() *FileState { return &FileState{files: make(map[string]FileSeen)} }

// Saw records that the model saw path as it is now.
func (s *FileState) Saw(path string, seen FileSeen) {
	s.mu.Lock()
	s.files[path] = seen
	s.mu.Unlock()
}

// Seen returns what the model last saw of path.
func (s *FileState) Seen(path string) (FileSeen, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[path]
	return f, ok
}

// Forget drops everything (after compaction the model has not seen files
// it only read before).
func (s *FileState) Forget() {
	s.mu.Lock()
	clear(s.files)
	s.mu.Unlock()
}
