package deptest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Transcripts are read and written through transcript.Store; only the
// file store itself opens a transcript file. TestNoTranscriptOpens checks
// the packages that work with sessions for a call that opens a file (see
// opens) whose path comes from a transcript path (see pathSources): the
// path a store, a lookup or a listing gives, a ".jsonl" name, or a value
// built from one (joined, concatenated, formatted) and kept in a local
// variable of the same function.
//
// It is simple, and so has limits: the flow is followed within one
// function only (a path passed as a parameter to a helper that opens it
// is not seen, nor one kept in a struct field other than those listed),
// only the listed packages are read, and removing, renaming or stat-ing a
// transcript (retention's moves of whole sessions, which work on the
// home's folders) is not counted as opening it.
//
// What a grep for os.Open, os.ReadFile and transcript.OpenFile outside
// package transcript still finds opening a transcript by path, and why:
//   - session: the home's file layout itself (listing, lookup, search,
//     sniffing a file's first lines, retention's copies of a session's
//     files when it moves them); byPathAllowed below.
//   - bench/cmd/cairn-bench (sessionIDOf, copyFile in firstreq.go): the
//     benchmark lays out the same transcript in two homes on disk, one
//     for Claude Code and one for cairn, and reads the id both resume it
//     by; paths passed to a helper, which the scan does not follow.
//   - internal/ccoracle: reads the transcripts the real Claude Code
//     wrote in its own home, which no cairn store holds (not scanned).
//
// Everything else reads and writes transcripts through a store: a file
// named on the command line through transcript.FileStoreOf, a followed
// session through FileStore.Follow.
var scanned = []string{
	module + "/bench/cmd/cairn-bench",
	module + "/bench/workload",
	module + "/internal/agent",
	module + "/internal/cli",
	module + "/internal/compact",
	module + "/internal/filehistory",
	module + "/internal/hook",
	module + "/internal/memory",
	module + "/internal/serve",
	module + "/internal/sessionmemory",
	module + "/internal/tools",
	module + "/internal/tui",
	module + "/session",
	module + "/transcript/pgstore",
}

// opens are the calls that open a file for its content, by package path
// and name.
var opens = map[string]bool{
	"os.Open": true, "os.OpenFile": true, "os.ReadFile": true, "os.WriteFile": true,
	"os.Create": true, "os.Truncate": true,
	"github.com/google/renameio/v2.WriteFile":      true,
	"github.com/google/renameio/v2.TempFile":       true,
	"github.com/google/renameio/v2.NewPendingFile": true,
	// The file store's own open by path: outside session (see below),
	// a transcript named by path is opened through its folder's store
	// (transcript.FileStoreOf).
	module + "/transcript.OpenFile": true,
}

// byPathAllowed are the packages that may open a transcript by path
// through transcript.OpenFile: session is the home's file layout (its
// listing, lookup, search and retention walk the projects' folders).
var byPathAllowed = map[string]bool{module + "/session": true}

// pathSources are the functions, methods and fields whose value is a
// transcript's path, as package.Type.Name (package.Name for a function).
var pathSources = map[string]bool{
	module + "/transcript.FileStore.Path":               true,
	module + "/transcript.SessionInfo.Path":             true,
	module + "/session.Home.Find":                       true,
	module + "/session.Info.Path":                       true,
	module + "/session.sessionFile.path":                true,
	module + "/session.AmbiguousError.Paths":            true,
	module + "/internal/agent.Agent.Path":               true,
	module + "/internal/agent.Agent.path":               true,
	module + "/internal/agent.childTranscript.path":     true,
	module + "/internal/cli.findSession":                true,
	module + "/internal/agent.Subagent.TranscriptPath":  true,
	module + "/internal/tui.Session.Path":               true,
	module + "/internal/tui.StatusInput.TranscriptPath": true,
	module + "/internal/hook.Session.TranscriptPath":    true,
	module + "/internal/hook.Subagent.TranscriptPath":   true,
}

func TestNoTranscriptOpens(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the session packages; skipped with -short")
	}
	exports := exportData(t, scanned)
	imp := exportImporter(exports)
	var found []string
	for _, pkg := range scanned {
		found = append(found, scanPackage(t, imp, pkg)...)
	}
	for _, f := range found {
		t.Error(f)
	}
	if len(found) > 0 {
		t.Log("open transcripts through transcript.Store (FileStoreOf for a path), not by path")
	}
}

// TestNoTranscriptOpensCatches runs the scan on a package written to
// break the rule in each way it checks, so a scan that sees nothing is
// not taken for a clean tree.
func TestNoTranscriptOpensCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the session packages; skipped with -short")
	}
	exports := exportData(t, []string{module + "/session", module + "/transcript"})
	imp := exportImporter(exports)
	src := `package bad

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

func a(h session.Home) {
	p, _ := h.Find("/cwd", "id")
	os.ReadFile(p)
}

func b(s *transcript.FileStore) {
	os.Open(s.Path("id"))
}

func c(dir, id string) {
	name := id + ".jsonl"
	path := filepath.Join(dir, name)
	os.OpenFile(path, os.O_RDONLY, 0)
}

func d(infos []transcript.SessionInfo) {
	for _, in := range infos {
		os.ReadFile(fmt.Sprint(in.Path))
	}
}

func fine(dir string) {
	os.ReadFile(filepath.Join(dir, "settings.json"))
}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	found := scanFiles(t, imp, "bad", []string{filepath.Join(dir, "bad.go")})
	if len(found) != 4 {
		t.Errorf("the scan found %d opens of a transcript path, want 4 (in a, b, c, d):\n%s", len(found), strings.Join(found, "\n"))
	}
	for _, f := range found {
		if strings.Contains(f, "fine") {
			t.Errorf("the scan flagged an open of another file: %s", f)
		}
	}
}

// exportData builds the packages and returns the export data file of
// each package they depend on.
func exportData(t *testing.T, pkgs []string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	return exports
}

// exportImporter imports packages from their export data.
func exportImporter(exports map[string]string) types.Importer {
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

func scanPackage(t *testing.T, imp types.Importer, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	fields := strings.Fields(string(out))
	var names []string
	for _, f := range fields[1:] {
		names = append(names, filepath.Join(fields[0], f))
	}
	return scanFiles(t, imp, pkg, names)
}

// scanFiles type-checks the files of the package pkg (its non-test files
// for this platform) and returns the opens of a transcript path they
// make, one line each.
func scanFiles(t *testing.T, imp types.Importer, pkg string, names []string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(pkg, fset, files, info); err != nil {
		t.Fatalf("type-check %s: %v", pkg, err)
	}
	var found []string
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			s := &scan{info: info, tainted: map[types.Object]bool{}}
			s.taint(fn.Body)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 || !opens[s.callee(call)] {
					return true
				}
				if s.callee(call) == module+"/transcript.OpenFile" && byPathAllowed[pkg] {
					return true
				}
				if s.isPath(call.Args[0]) {
					found = append(found, fmt.Sprintf("%s: %s opens a transcript path (in %s)", fset.Position(call.Pos()), s.callee(call), fn.Name.Name))
				}
				return true
			})
		}
	}
	return found
}

// scan follows transcript paths through one function.
type scan struct {
	info    *types.Info
	tainted map[types.Object]bool
}

// taint marks the local variables assigned a transcript path anywhere in
// body, until no more are found (so the order of the assignments does
// not matter).
func (s *scan) taint(body *ast.BlockStmt) {
	for changed := true; changed; {
		changed = false
		mark := func(lhs ast.Expr) {
			if id, ok := lhs.(*ast.Ident); ok {
				if obj := s.object(id); obj != nil && !s.tainted[obj] {
					s.tainted[obj] = true
					changed = true
				}
			}
		}
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, r := range n.Rhs {
					if !s.isPath(r) {
						continue
					}
					if len(n.Rhs) == len(n.Lhs) {
						mark(n.Lhs[i])
					} else {
						mark(n.Lhs[0]) // p, err := h.Find(…)
					}
				}
			case *ast.ValueSpec:
				for i, r := range n.Values {
					if s.isPath(r) && i < len(n.Names) {
						mark(n.Names[i])
					}
				}
			case *ast.RangeStmt:
				if s.isPath(n.X) && n.Value != nil {
					mark(n.Value)
				}
			}
			return true
		})
	}
}

func (s *scan) object(id *ast.Ident) types.Object {
	if obj := s.info.Defs[id]; obj != nil {
		return obj
	}
	return s.info.Uses[id]
}

// callee names a call's function as package.Name, "" when it is not a
// package-level function.
func (s *scan) callee(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	fn, ok := s.info.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Type().(*types.Signature).Recv() != nil {
		return ""
	}
	return fn.Pkg().Path() + "." + fn.Name()
}

// member names a method or field as package.Type.Name.
func member(obj types.Object, recv types.Type) string {
	if obj.Pkg() == nil {
		return ""
	}
	for {
		p, ok := recv.(*types.Pointer)
		if !ok {
			break
		}
		recv = p.Elem()
	}
	named, ok := recv.(*types.Named)
	if !ok {
		return ""
	}
	return obj.Pkg().Path() + "." + named.Obj().Name() + "." + obj.Name()
}

// isPath reports whether e is, or is built from, a transcript path.
func (s *scan) isPath(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.BasicLit:
			found = n.Kind == token.STRING && strings.Contains(n.Value, ".jsonl")
		case *ast.Ident:
			found = s.tainted[s.object(n)]
		case *ast.SelectorExpr:
			if sel := s.info.Selections[n]; sel != nil && pathSources[member(sel.Obj(), sel.Recv())] {
				found = true
			}
		case *ast.CallExpr:
			// A package's function that returns a transcript path.
			var id *ast.Ident
			switch f := n.Fun.(type) {
			case *ast.Ident:
				id = f
			case *ast.SelectorExpr:
				id = f.Sel
			}
			if fn, ok := s.info.Uses[id].(*types.Func); ok && fn.Pkg() != nil && pathSources[fn.Pkg().Path()+"."+fn.Name()] {
				found = true
			}
		case *ast.FuncLit:
			return false // a closure is not the value
		}
		return !found
	})
	return found
}
