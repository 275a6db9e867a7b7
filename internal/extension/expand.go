package extension

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxIncludeBytes is the largest file an @path includes.
const MaxIncludeBytes = 256 << 10

// Expansion is a command or skill made into the user's message: Blocks
// are its text blocks (the header naming the command, then the body),
// Files the @path includes, which go with the message as context.
type Expansion struct {
	Blocks []string
	Files  []File
	// Warnings name what was left out (an @path missing or outside the
	// project).
	Warnings []string
}

// File is an @path include.
type File struct {
	Path    string // absolute
	Content string
}

// ExpandOptions are what expanding a command needs.
type ExpandOptions struct {
	// Dir is the project: @paths are relative to it and must stay in it;
	// !`…` commands run there.
	Dir string
	// Allow decides whether the shell command may run: nil when the
	// permission rules, with the command's own allowed-tools rules added,
	// allow it, else an error saying why not. Nil Allow denies every one.
	Allow func(ctx context.Context, command string, allowedTools []string) error
	// Read decides whether an @path include may be read, as the Read
	// tool's call of it would be decided: nil when allowed, else an error
	// saying why not. Nil Read allows every file of the project.
	Read func(ctx context.Context, path string) error
	// Shell runs an allowed command and returns its output; nil is
	// RunShell.
	Shell func(ctx context.Context, dir, command string) (string, error)
}

// ErrDenied wraps the refusal of a !`…` command.
var ErrDenied = errors.New("a shell command of the command was not allowed to run")

// Header is the block that names a command the person typed.
func Header(name, args string) string {
	h := "<command-message>" + name + "</command-message>\n<command-name>/" + name + "</command-name>\n"
	if args != "" {
		h += "<command-args>" + args + "</command-args>\n"
	}
	return h
}

// Expand makes the command, typed with args, into the user's message.
// Every !`…` command is checked before any runs: one that is not allowed
// fails the whole expansion (errors.Is ErrDenied) and none runs.
func (c *Command) Expand(ctx context.Context, args string, o ExpandOptions) (*Expansion, error) {
	text := Substitute(c.Body, args)
	return expand(ctx, c.Path, c.Name, args, text, c.AllowedTools, o)
}

// Text is the skill's body as the model reads it once loaded, with args
// given after its name.
func (k *Skill) Text(args string) string {
	return "Base directory for this skill: " + k.Dir + "\n\n" + Substitute(k.Body, args)
}

// Expand makes the skill, typed as /name args, into the user's message.
func (k *Skill) Expand(ctx context.Context, args string, o ExpandOptions) (*Expansion, error) {
	return expand(ctx, k.Path, k.Name, args, k.Text(args), k.AllowedTools, o)
}

func expand(ctx context.Context, path, name, args, text string, allowed []string, o ExpandOptions) (*Expansion, error) {
	x := &Expansion{}
	x.Files, x.Warnings = includes(ctx, path, text, o)
	text, err := runBang(ctx, path, text, allowed, o)
	if err != nil {
		return nil, err
	}
	x.Blocks = []string{Header(name, args), text}
	return x, nil
}

var (
	argRef   = regexp.MustCompile(`\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)`)
	bangRef  = regexp.MustCompile("!`([^`\n]+)`")
	fileRef  = regexp.MustCompile(`(?:^|[\s(\[])@([^\s]+)`)
	trailing = ".,;:!?)]}'\""
)

// Substitute puts args into body as Claude Code does: $ARGUMENTS is all
// of them as typed, $0, $1 … and $ARGUMENTS[0] … each one (counting from
// 0; quotes group words), a reference past the last left as written.
// When body takes none of them, args are added at its end.
func Substitute(body, args string) string {
	words := SplitArgs(args)
	used := false
	out := argRef.ReplaceAllStringFunc(body, func(ref string) string {
		if ref == "$ARGUMENTS" {
			used = true
			return args
		}
		m := argRef.FindStringSubmatch(ref)
		n, _ := strconv.Atoi(m[1] + m[2])
		if n < len(words) {
			used = true
			return words[n]
		}
		return ref
	})
	if !used && strings.TrimSpace(args) != "" {
		out += "\n\nARGUMENTS: " + args
	}
	return out
}

// SplitArgs splits args into words as a shell would: spaces separate,
// quotes group, a backslash escapes.
func SplitArgs(args string) []string {
	var out []string
	var cur strings.Builder
	in, quote, esc := false, rune(0), false
	for _, r := range args {
		switch {
		case esc:
			cur.WriteRune(r)
			esc, in = false, true
		case r == '\\' && quote != '\'':
			esc = true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// includes reads the files text names with @path: inside dir only.
func includes(ctx context.Context, path, text string, o ExpandOptions) ([]File, []string) {
	dir := o.Dir
	var files []File
	var warns []string
	seen := map[string]bool{}
	// A !`…` command's own text is not an include.
	text = bangRef.ReplaceAllString(text, "")
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		root = dir
	}
	for _, m := range fileRef.FindAllStringSubmatch(text, -1) {
		ref := m[1]
		name := strings.TrimRight(ref, trailing)
		if _, err := os.Stat(resolve(dir, ref)); err == nil {
			name = ref
		}
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		abs := resolve(dir, name)
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: @%s is not included: there is no such file in the project", path, name))
			continue
		}
		if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			warns = append(warns, fmt.Sprintf("%s: @%s is not included: it is outside the project (%s); name a file inside it", path, name, dir))
			continue
		}
		if o.Read != nil {
			if err := o.Read(ctx, abs); err != nil {
				warns = append(warns, fmt.Sprintf("%s: @%s is not included: %v", path, name, err))
				continue
			}
		}
		info, err := os.Stat(real)
		switch {
		case err != nil:
			warns = append(warns, fmt.Sprintf("%s: @%s is not included: %v", path, name, err))
			continue
		case info.IsDir():
			warns = append(warns, fmt.Sprintf("%s: @%s is not included: it is a folder; name a file", path, name))
			continue
		case info.Size() > MaxIncludeBytes:
			warns = append(warns, fmt.Sprintf("%s: @%s is not included: it is %s, more than the %s an include may be; let the model read it with Read instead", path, name, size(info.Size()), size(MaxIncludeBytes)))
			continue
		}
		data, err := os.ReadFile(real)
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s: @%s is not included: %v", path, name, err))
			continue
		}
		files = append(files, File{Path: abs, Content: string(data)})
	}
	return files, warns
}

func resolve(dir, name string) string {
	if strings.HasPrefix(name, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, name[2:])
		}
	}
	if filepath.IsAbs(name) {
		return filepath.Clean(name)
	}
	return filepath.Join(dir, name)
}

// runBang checks every !`…` command of text, then runs them all and puts
// their output in their place.
func runBang(ctx context.Context, path, text string, allowed []string, o ExpandOptions) (string, error) {
	refs := bangRef.FindAllStringSubmatch(text, -1)
	if len(refs) == 0 {
		return text, nil
	}
	for _, m := range refs {
		var err error
		if o.Allow == nil {
			err = errors.New("no permission checker is configured")
		} else {
			err = o.Allow(ctx, m[1], allowed)
		}
		if err != nil {
			return "", fmt.Errorf("%w: %s: !`%s` did not run, and neither did the command: %v. Allow it with a Bash rule in the settings or in the command's allowed-tools, or run the step yourself", ErrDenied, path, m[1], err)
		}
	}
	shell := o.Shell
	if shell == nil {
		shell = RunShell
	}
	outputs := map[string]string{}
	for _, m := range refs {
		if _, ok := outputs[m[1]]; ok {
			continue
		}
		out, err := shell(ctx, o.Dir, m[1])
		if err != nil {
			out = strings.TrimSpace(out + "\n[" + err.Error() + "]")
		}
		outputs[m[1]] = out
	}
	return bangRef.ReplaceAllStringFunc(text, func(ref string) string {
		return outputs[bangRef.FindStringSubmatch(ref)[1]]
	}), nil
}

// ShellTimeout bounds a !`…` command.
const ShellTimeout = 30 * time.Second

// RunShell runs command with bash in dir and returns its output (stdout
// and stderr), without the final newline.
func RunShell(ctx context.Context, dir, command string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ShellTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("stopped after %s", ShellTimeout)
	}
	return strings.TrimRight(out.String(), "\n"), err
}
