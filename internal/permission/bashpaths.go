package permission

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/sandbox"
	"github.com/cairn-dev/cairn/internal/shellsafe"
)

// Path constraints (SPEC G4, G7): a rule such as Bash(touch:*) says which
// program may run, not where it may write. Before any allow rule is
// consulted, every command of a line is followed from the directories it
// may run in (after each cd), and the paths it writes, and the secrets it
// reads, must be inside the project or an additional directory. An allow
// rule that names the path itself (Bash(touch /tmp/x), Edit(~/.bashrc))
// still allows it.

// role is how a command uses a path it names.
type role int

const (
	roleRead  role = iota // reads it: only secrets matter
	roleWrite             // creates, changes, moves or deletes it
	roleLink              // a link is made that leads there
	roleMaybe             // an unknown command that changes things names it
)

// pathArg is a path a command names, and what it does with it.
type pathArg struct {
	word shellsafe.Word
	role role
	// fromLink: a link target, resolved from the folder of the link
	// rather than the working directory.
	linkDir string
	// opaque, when set, says why the command writes places that cannot
	// be known before it runs (tar -P, sed's e command …): it always
	// needs confirmation, unless a rule names the command.
	opaque string
}

// opaqueArg is a pathArg for writes cairn cannot follow.
func opaqueArg(why string) pathArg { return pathArg{role: roleWrite, opaque: why} }

// PathCheck explains a decision that a path constraint took: which path,
// which folders it fell outside, which rule would allow it. It is part of
// Decision's JSON form (`cairn permissions check --json`).
type PathCheck struct {
	// Path is the file or folder, absolute; Resolved is where its
	// symbolic links lead, when that is elsewhere.
	Path     string `json:"path"`
	Resolved string `json:"resolved,omitempty"`
	// Access is "write", "read" (a secret), "link" or "cwd" (the command
	// works in that folder).
	Access string `json:"access"`
	// Command is the command of the line that uses the path.
	Command string `json:"command"`
	// Outside are the folders the path is not in: the project and the
	// additional directories. Empty when the path is a secret inside none
	// of them, or not known.
	Outside []string `json:"outside"`
	// AllowWith is a rule that would allow it.
	AllowWith string `json:"allowWith"`
}

// dirs are the directories a command may run in; unknown is set when one
// of them is only known at run time (after cd -, cd $VAR).
type dirs struct {
	list    []string
	unknown bool
}

// trackDirs follows cd through the line: each command gets the directories
// it may run in — the working directory and the targets of every cd before
// it (a cd may fail or run in a subshell, so none is ever dropped). A cd in
// a loop or a function may run any number of times anywhere: then the
// targets are closed under every cd and every command gets all of them.
func (b *bashCheck) trackDirs() {
	b.dirsOf = make(map[*shellsafe.Command]dirs, len(b.all))
	cur := dirs{list: []string{b.p.cwd}}
	repeats := false
	landed := make(map[*shellsafe.Command]dirs) // where a cd that succeeded leads
	for _, c := range b.all {
		here := cur
		if w := b.parent[c]; w != nil && w.Via != shellsafe.Shell {
			here = b.dirsOf[w] // env, nice, sudo … run it where they run
		} else if l, ok := landed[c.After]; ok && c.After != nil {
			here = l // "cd src && make": make runs only in src
		}
		b.dirsOf[c] = here
		if !isCd(c) {
			continue
		}
		repeats = repeats || c.Repeats
		to := b.applyCd(c, dirs{unknown: here.unknown}, here.list)
		if prev := c.After; prev != nil && isCd(prev) && backCd(c) {
			// "cd x && cd -" goes back to where the cd x ran.
			to = b.dirsOf[prev]
		}
		landed[c] = to
		for _, d := range to.list {
			if !contains(cur.list, d) && len(cur.list) < maxDirs {
				cur.list = append(cur.list, d)
			} else if !contains(cur.list, d) {
				cur.unknown = true // too many to follow
			}
		}
		cur.unknown = cur.unknown || to.unknown
	}
	if repeats {
		for range maxDirs {
			n, unknown := len(cur.list), cur.unknown
			for _, c := range b.all {
				if isCd(c) {
					cur = b.applyCd(c, cur, cur.list)
				}
			}
			if len(cur.list) == n && cur.unknown == unknown {
				break
			}
		}
		for _, c := range b.all {
			b.dirsOf[c] = cur
		}
	}
	b.cwds = cur.list
	b.cwdUnknown = cur.unknown
}

// backCd reports whether a cd goes back to the previous directory: cd -,
// cd $OLDPWD.
func backCd(c *shellsafe.Command) bool {
	if path.Base(c.Name()) != "cd" || len(c.Args) != 2 {
		return false
	}
	switch v := c.Args[1].Value; v {
	case "-", "$OLDPWD", `"$OLDPWD"`, "${OLDPWD}", `"${OLDPWD}"`:
		return v == "-" || c.Args[1].Dynamic
	}
	return false
}

// applyCd adds to ds where a cd may lead from the directories from.
func (b *bashCheck) applyCd(c *shellsafe.Command, ds dirs, from []string) dirs {
	out := dirs{list: append([]string(nil), ds.list...), unknown: ds.unknown}
	for _, t := range b.cdTargetsFrom(c, from) {
		switch {
		case t == "":
			out.unknown = true
		case !contains(out.list, t) && len(out.list) < maxDirs:
			out.list = append(out.list, t)
		case !contains(out.list, t):
			out.unknown = true // too many to follow
		}
	}
	return out
}

// lookup knows the variables the shell would expand in a path: HOME, and
// PWD in dir.
func (b *bashCheck) lookup(dir string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch name {
		case "HOME":
			return b.p.home, b.p.home != ""
		case "PWD":
			return dir, dir != ""
		}
		return "", false
	}
}

// pathProblem applies the path constraints to the whole line. It returns
// the first path that falls outside, with the reason, or nil.
func (b *bashCheck) pathProblem() (*PathCheck, string) {
	if len(b.script.Whole) > 0 {
		// What cannot be read cannot be followed: no rule allows it.
		return &PathCheck{Access: "write", Command: clip(b.line), AllowWith: b.lineRule()},
			fmt.Sprintf("`%s` needs confirmation: %s, so cairn cannot tell which files it writes.", clip(b.line), b.script.Whole[0])
	}
	for _, c := range b.all {
		if pc, why := b.commandPaths(c); pc != nil {
			return pc, why
		}
	}
	for _, r := range b.script.Redirects {
		if pc, why := b.redirectPath(nil, r, dirs{list: b.cwds, unknown: b.cwdUnknown}); pc != nil {
			return pc, why
		}
	}
	return nil, ""
}

// commandPaths checks the paths of one command and its redirections.
func (b *bashCheck) commandPaths(c *shellsafe.Command) (*PathCheck, string) {
	ds := b.dirsOf[c]
	if len(ds.list) == 0 {
		ds.list = []string{b.p.cwd} // only absolute paths are known; unknown says so
	}
	src := clip(strings.TrimSpace(c.Source))
	if src == "" {
		src = clip(c.Text())
	}
	for _, r := range c.Redirects {
		if pc, why := b.redirectPath(c, r, ds); pc != nil {
			return pc, why
		}
	}
	if len(c.Args) == 0 || isCd(c) {
		return nil, ""
	}
	unknownProgram := c.Dynamic && len(c.Inner) == 0 || c.Args[0].Dynamic || c.Args[0].Glob
	var args []pathArg
	known := false
	if !unknownProgram {
		args, known = pathArgs(c)
	}
	if !known && len(c.Inner) == 0 {
		if unknownProgram || !shellsafe.ClassifyCommand(bare(c)).ReadOnly {
			// An unknown command that changes things: it may write any
			// path it is given, and where it runs.
			for _, a := range c.Args[1:] {
				_, val, isOpt := strings.Cut(a.Value, "=")
				if pathLike(a.Value) || a.Dynamic || (isOpt && strings.HasPrefix(a.Value, "-") && pathLike(val)) {
					args = append(args, pathArg{word: a, role: roleMaybe})
				} else {
					args = append(args, pathArg{word: a, role: roleRead})
				}
			}
			if pc, why := b.cwdOutside(c, ds, src); pc != nil {
				return pc, why
			}
		} else {
			for _, a := range c.Args[1:] {
				args = append(args, pathArg{word: a, role: roleRead})
			}
		}
	}
	if c.OpenArgs && (writes(args) || !shellsafe.ClassifyCommand(bare(c)).ReadOnly) {
		return &PathCheck{Access: "write", Command: src, AllowWith: "Bash(" + src + ")"},
			"`" + src + "` needs confirmation: it writes files whose names are only known when it runs, which may be outside the project " + b.p.project + "."
	}
	for _, a := range args {
		if pc, why := b.argPath(c, a, ds, src); pc != nil {
			return pc, why
		}
	}
	return nil, ""
}

// cwdOutside asks when a command that changes things runs in a folder
// outside the project.
func (b *bashCheck) cwdOutside(c *shellsafe.Command, ds dirs, src string) (*PathCheck, string) {
	if ds.unknown {
		return &PathCheck{Access: "cwd", Command: src, AllowWith: "Bash(" + c.Text() + ")"},
			"`" + src + "` needs confirmation: it changes files, and the directory it runs in is only known when it runs."
	}
	for _, d := range ds.list {
		if !b.p.inside(d) && !b.named(c, shellsafe.Word{Value: d}) {
			return b.outsideCheck(d, "cwd", src, c), "`" + src + "` needs permission: it changes files and runs in " + d + ", outside " + b.where() + "."
		}
	}
	return nil, ""
}

// argPath checks one path a command names.
func (b *bashCheck) argPath(c *shellsafe.Command, a pathArg, ds dirs, src string) (*PathCheck, string) {
	if a.opaque != "" {
		if b.exactRule(c) {
			return nil, ""
		}
		return &PathCheck{Access: "write", Command: src, AllowWith: "Bash(" + c.Text() + ")"},
			"`" + src + "` needs confirmation: " + a.opaque + ", so cairn cannot tell whether it stays inside " + b.where() + ". Allow it with the rule Bash(" + c.Text() + ")."
	}
	v := a.word.Value
	if strings.HasPrefix(v, "-") && (a.role == roleMaybe || a.role == roleRead) {
		// An option: only a value after = may be a path.
		_, val, ok := strings.Cut(v, "=")
		if !ok || a.role == roleMaybe && !pathLike(val) {
			return nil, ""
		}
		v = val
		a.word = shellsafe.Word{Value: val, Dynamic: a.word.Dynamic, Glob: a.word.Glob}
	}
	for _, dir := range ds.list {
		w := a.word
		if w.Dynamic {
			x, ok := shellsafe.Expand(w, b.lookup(dir))
			if !ok {
				if a.role == roleRead || a.role == roleMaybe && !strings.Contains(w.Value, "/") {
					continue
				}
				return &PathCheck{Access: access(a.role), Command: src, AllowWith: "Bash(" + src + ")"},
					"`" + src + "` needs confirmation: the path " + w.Value + " it writes is only known when it runs, so cairn cannot tell whether it stays inside " + b.where() + "."
			}
			v = x
		}
		if a.word.Glob {
			v = globBase(v)
		}
		base := dir
		if a.linkDir != "" {
			base = b.p.abs(a.linkDir, dir)
		}
		if !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") && ds.unknown && a.role != roleRead {
			return &PathCheck{Access: access(a.role), Command: src, AllowWith: "Bash(" + c.Text() + ")"},
				"`" + src + "` needs confirmation: it writes " + v + " relative to a directory only known when it runs (after cd - or cd to a variable)."
		}
		p := b.p.abs(v, base)
		if p == "" {
			if a.role == roleRead {
				continue
			}
			return &PathCheck{Path: v, Access: access(a.role), Command: src, AllowWith: "Bash(" + c.Text() + ")"},
				"`" + src + "` needs confirmation: cairn cannot tell where " + v + " is."
		}
		switch a.role {
		case roleRead:
			if b.secret(p) && !b.allowedPathRule("Read", p) && !b.named(c, a.word) {
				pc := b.outsideCheck(p, "read", src, c)
				pc.AllowWith = suggestPath("Read", b.p, p)
				return pc, "`" + src + "` needs permission: it reads " + p + ", which may hold secrets (credentials, keys or .env files outside the project). Allow it with a rule such as " + pc.AllowWith + " or Bash(" + c.Text() + ")."
			}
		default:
			if b.p.inside(p) || b.allowedPathRule("Edit", p) || b.named(c, a.word) {
				continue
			}
			pc := b.outsideCheck(p, access(a.role), src, c)
			what := "writes"
			switch a.role {
			case roleLink:
				what = "makes a link to"
			case roleMaybe:
				what = "may write"
			}
			return pc, "`" + src + "` needs permission: it " + what + " " + p + ", outside " + b.where() + ". Allow it with a rule that names the path, such as " + pc.AllowWith + ", or add the folder with --add-dir."
		}
	}
	return nil, ""
}

// redirectPath checks a redirection's target: a write must stay inside,
// a read must not be a secret. c is the command it is on (nil for the
// line).
func (b *bashCheck) redirectPath(c *shellsafe.Command, r shellsafe.Redirect, ds dirs) (*PathCheck, string) {
	if r.Target == "" || (r.Write && isDevice(r.Target)) {
		return nil, ""
	}
	src := clip(b.line)
	if c != nil {
		src = clip(strings.TrimSpace(c.Source))
	}
	role := roleRead
	if r.Write {
		role = roleWrite
	}
	w := shellsafe.Word{Value: r.Target, Dynamic: r.Dynamic}
	for _, dir := range ds.list {
		v := r.Target
		if r.Dynamic {
			x, ok := shellsafe.Expand(w, b.lookup(dir))
			if !ok {
				if !r.Write {
					continue
				}
				return &PathCheck{Access: "write", Command: src, AllowWith: b.lineRule()},
					"`" + src + "` needs confirmation: the redirection target " + r.Target + " is only known when it runs."
			}
			v = x
		}
		if r.Write && !filepath.IsAbs(v) && !strings.HasPrefix(v, "~") && ds.unknown {
			return &PathCheck{Access: "write", Command: src, AllowWith: b.lineRule()},
				"`" + src + "` needs confirmation: it writes " + v + " relative to a directory only known when it runs (after cd - or cd to a variable)."
		}
		p := b.p.abs(v, dir)
		if p == "" {
			return &PathCheck{Path: v, Access: access(role), Command: src, AllowWith: b.lineRule()},
				"`" + src + "` needs confirmation: cairn cannot tell where " + v + " is."
		}
		if !r.Write {
			if b.secret(p) && !b.allowedPathRule("Read", p) {
				pc := b.outsideCheck(p, "read", src, c)
				pc.AllowWith = suggestPath("Read", b.p, p)
				return pc, "`" + src + "` needs permission: it reads " + p + ", which may hold secrets. Allow it with a rule such as " + pc.AllowWith + "."
			}
			continue
		}
		if b.p.inside(p) || b.allowedPathRule("Edit", p) {
			continue
		}
		pc := b.outsideCheck(p, "write", src, c)
		pc.AllowWith = suggestPath("Edit", b.p, p)
		return pc, "`" + src + "` needs permission: it writes " + p + ", outside " + b.where() + ". Allow it with a rule such as " + pc.AllowWith + ", or add the folder with --add-dir."
	}
	return nil, ""
}

// outsideCheck describes a path that fell outside.
func (b *bashCheck) outsideCheck(p, acc, src string, c *shellsafe.Command) *PathCheck {
	pc := &PathCheck{Path: p, Access: acc, Command: src}
	if r := b.p.realPath(p); r != p {
		pc.Resolved = r
	}
	if !b.p.inside(p) {
		pc.Outside = append([]string(nil), b.p.rootsGiven()...)
	}
	if c != nil {
		pc.AllowWith = "Bash(" + c.Text() + ")"
	} else {
		pc.AllowWith = suggestPath("Edit", b.p, p)
	}
	return pc
}

// where names the project and the additional directories, for messages.
func (b *bashCheck) where() string {
	roots := b.p.rootsGiven()
	if len(roots) <= 1 {
		return "the project " + b.p.project
	}
	return "the project " + b.p.project + " and the added directories " + strings.Join(roots[1:], ", ")
}

// named reports whether an allow rule names the path word itself: the
// rule allowing c (or a wrapper running it) is an exact command, or its
// fixed words include the path.
func (b *bashCheck) named(c *shellsafe.Command, w shellsafe.Word) bool {
	for x := c; x != nil; x = b.parent[x] {
		r, ok := b.allowRule(x)
		if !ok {
			continue
		}
		bp := b.req.Rules.pattern(r.Specifier)
		switch {
		case bp.all:
		case bp.re != nil:
			// A word the rule spells out before its wildcard, whole: a
			// substring ("/" in "/tmp/build*") names nothing.
			if lit := strings.Fields(bp.lit); len(lit) > 1 && contains(lit[1:], w.Value) {
				return true
			}
		case !bp.prefix:
			return true
		default:
			if len(bp.words) > 1 && contains(bp.words[1:], w.Value) {
				return true
			}
		}
	}
	return false
}

// exactRule reports whether an allow rule names c (or a wrapper running
// it) exactly, as Bash(tar -xPf a.tar) does: nothing but that command.
func (b *bashCheck) exactRule(c *shellsafe.Command) bool {
	for x := c; x != nil; x = b.parent[x] {
		if r, ok := b.allowRule(x); ok {
			if bp := b.req.Rules.pattern(r.Specifier); !bp.all && !bp.prefix && bp.re == nil {
				return true
			}
		}
	}
	return false
}

// allowedPathRule reports whether an allow rule for tool with a specifier
// (Edit(~/.bashrc), not Edit) covers path: naming the place is what lets a
// path outside the project be written.
func (b *bashCheck) allowedPathRule(tool string, p string) bool {
	for _, r := range b.req.Rules.Allow {
		if r.Tool == tool && r.Specifier != "" && r.Broken == "" && matchForms(b.p, r, p, false) {
			return true
		}
	}
	return false
}

// secret reports whether a path outside the project and its folders may
// hold credentials.
func (b *bashCheck) secret(p string) bool { return b.p.secret(p) }

// secret reports whether p, in any of its forms, is a place that holds
// credentials — ~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gcloud, keychains and
// the like, or a .env file — and lies outside the project and its folders.
func (p place) secret(path string) bool {
	if p.inside(path) {
		return false
	}
	for _, f := range p.forms(path) {
		if isSecret(f, p.home) {
			return true
		}
	}
	return false
}

func isSecret(p, home string) bool {
	if home != "" {
		if rel, ok := below(p, home); ok && rel != "" {
			for _, d := range sandbox.Hidden {
				if rel == d || strings.HasPrefix(rel, d+"/") {
					return true
				}
			}
		}
	}
	switch base := filepath.Base(p); {
	case sandbox.IsEnvFile(base):
		return true
	case strings.HasPrefix(base, "id_rsa"), strings.HasPrefix(base, "id_ed25519"), strings.HasPrefix(base, "id_ecdsa"), strings.HasPrefix(base, "id_dsa"):
		return true
	case p == "/etc/shadow", p == "/etc/gshadow", p == "/etc/sudoers", strings.HasPrefix(p, "/etc/ssh/ssh_host_"):
		return true
	}
	return false
}

func access(r role) string {
	switch r {
	case roleRead:
		return "read"
	case roleLink:
		return "link"
	}
	return "write"
}

func writes(args []pathArg) bool {
	for _, a := range args {
		if a.role != roleRead {
			return true
		}
	}
	return false
}

// pathLike reports whether an argument looks like a path outside the
// folder it is given in: absolute, from the home folder, or going up.
func pathLike(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || v == ".." ||
		strings.HasPrefix(v, "../") || strings.Contains(v, "/../") || strings.HasSuffix(v, "/..")
}

// bare is the command without its redirections (classified apart).
func bare(c *shellsafe.Command) *shellsafe.Command {
	x := *c
	x.Redirects = nil
	return &x
}

// rootsGiven returns the project and the additional directories as given.
func (p place) rootsGiven() []string {
	var out []string
	for i := 0; i < len(p.resolved); i += 2 {
		out = append(out, p.resolved[i])
	}
	return out
}

// pathArgs returns the paths a command names and what it does with each;
// known is false for a command this table does not describe (its
// arguments are then judged by how they look).
func pathArgs(c *shellsafe.Command) (out []pathArg, known bool) {
	name := path.Base(c.Name())
	args := c.Args[1:]
	all := func(r role, ws []shellsafe.Word) {
		for _, w := range ws {
			out = append(out, pathArg{word: w, role: r})
		}
	}
	switch name {
	case "touch", "mkdir", "rm", "rmdir", "unlink", "shred", "truncate", "mkfifo", "mknod", "tee":
		ops, vals := splitArgs(args, writerShort[name], "reference", "date", "mode", "size", "iterations", "context")
		all(roleWrite, ops)
		all(roleRead, vals["-r"])
		all(roleRead, vals["--reference"])
	case "chmod", "chown", "chgrp", "chattr", "setfacl":
		ops, vals := splitArgs(args, "", "reference")
		switch {
		case name == "chmod" && hasModeOption(args):
			// chmod -w FILE: the mode looks like an option, and every
			// operand is a file.
		case name == "chattr" && hasAttrOption(args):
		case len(vals["--reference"]) == 0 && len(ops) > 0 && name != "setfacl":
			ops = ops[1:] // the mode or the owner
		}
		all(roleWrite, ops)
	case "cp", "mv", "install", "scp", "rsync":
		ops, vals := splitArgs(args, copyShort[name], copyLong...)
		ops = localPaths(ops)
		src := roleRead
		if name == "mv" || hasLong(args, "--remove-source-files") {
			src = roleWrite // the sources are moved away
		}
		target := append(vals["-t"], vals["--target-directory"]...)
		if name == "install" && hasShortFlag(args, 'd') {
			all(roleWrite, ops)
			break
		}
		if len(target) == 0 && len(ops) > 0 {
			target, ops = ops[len(ops)-1:], ops[:len(ops)-1]
		}
		all(src, ops)
		all(roleWrite, target)
		for _, k := range []string{"--backup-dir", "--temp-dir", "--log-file", "--partial-dir", "-T", "--write-batch", "--only-write-batch"} {
			all(roleWrite, vals[k])
		}
		all(roleRead, vals["--files-from"])
		all(roleRead, vals["--read-batch"])
		all(roleRead, vals["-i"]) // scp's identity file
	case "ln":
		ops, vals := splitArgs(args, "tS", "target-directory", "suffix")
		target := append(vals["-t"], vals["--target-directory"]...)
		linkDir := "."
		switch {
		case len(target) > 0:
			linkDir = target[0].Value
		case len(ops) >= 2:
			target, ops = ops[len(ops)-1:], ops[:len(ops)-1]
			linkDir = path.Dir(target[0].Value)
			if !target[0].Dynamic && strings.HasSuffix(target[0].Value, "/") {
				linkDir = target[0].Value
			}
		case len(ops) == 1:
			target = []shellsafe.Word{{Value: "."}}
		}
		all(roleWrite, target)
		symbolic := hasShortFlag(args, 's') || hasLong(args, "--symbolic")
		for _, w := range ops {
			a := pathArg{word: w, role: roleLink}
			if symbolic {
				a.linkDir = linkDir
			}
			out = append(out, a)
		}
	case "dd":
		for _, w := range args {
			if v, ok := strings.CutPrefix(w.Value, "of="); ok {
				out = append(out, pathArg{word: shellsafe.Word{Value: v, Dynamic: w.Dynamic && strings.Contains(v, "$"), Glob: w.Glob}, role: roleWrite})
			}
			if v, ok := strings.CutPrefix(w.Value, "if="); ok {
				out = append(out, pathArg{word: shellsafe.Word{Value: v, Dynamic: w.Dynamic && strings.Contains(v, "$")}, role: roleRead})
			}
		}
	case "tar", "bsdtar", "gtar":
		out = tarPaths(args)
	case "git":
		out = gitPaths(c, args)
	case "find":
		out = findPaths(c, args)
	case "sed":
		out = sedPaths(args)
	case "awk", "gawk", "mawk", "nawk":
		out = awkPaths(args)
	case "perl":
		if !hasShortFlag(args, 'i') && !hasLongPrefix(args, "--in-place") {
			return nil, false // a program: judged as any other
		}
		ops, _ := splitArgs(args, "efl", "expression", "file")
		all(roleWrite, ops)
	case "env":
		// env -C DIR runs its command there.
		_, vals := splitArgs(args, "CSu", "chdir", "split-string", "unset")
		for _, w := range append(vals["-C"], vals["--chdir"]...) {
			for _, in := range c.Inner {
				if !shellsafe.ClassifyCommand(bare(in)).ReadOnly {
					out = append(out, pathArg{word: w, role: roleWrite})
					break
				}
			}
		}
	case "xargs":
		_, vals := splitArgs(args, "aEeIiLlnPsd", "arg-file", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "delimiter", "process-slot-var")
		all(roleRead, append(vals["-a"], vals["--arg-file"]...))
	case "sort", "tree", "curl", "wget", "patch", "unzip":
		ops, vals := splitArgs(args, outShort[name], outLong...)
		for _, k := range []string{"-o", "--output", "-O", "--output-document", "-P", "--directory-prefix", "-d", "-c", "--cookie-jar", "-D", "--dump-header", "--output-dir", "-a", "--append-output",
			"--trace", "--trace-ascii", "--stderr", "--etag-save", "--libcurl", "--alt-svc", "--hsts", "--save-cookies", "--warc-file", "-B", "--prefix"} {
			if name == "curl" && (k == "-O" || k == "-d") || name != "patch" && (k == "-B" || k == "--prefix") {
				continue
			}
			all(roleWrite, vals[k])
		}
		readKeys := []string{"-T", "--upload-file", "-K", "--config", "-i", "--input", "--post-file", "--body-file", "--load-cookies"}
		if name == "patch" {
			all(roleWrite, append(vals["-r"], vals["--reject-file"]...))
		} else {
			readKeys = append(readKeys, "-r", "--reject-file")
		}
		for _, k := range readKeys {
			all(roleRead, vals[k])
		}
		// Where they write without being told: wget, curl -O, unzip and
		// patch write into the working directory.
		switch {
		case name == "wget" && len(vals["-O"])+len(vals["--output-document"])+len(vals["-P"])+len(vals["--directory-prefix"]) == 0,
			name == "curl" && len(vals["--output-dir"]) == 0 && (hasShortFlag(args, 'O') || hasShortFlag(args, 'J') || hasLongPrefix(args, "--remote-name")),
			name == "unzip" && len(vals["-d"]) == 0 && !hasAnyShortFlag(args, "lptvZc"),
			name == "patch" && len(vals["-d"])+len(vals["--directory"])+len(vals["-o"])+len(vals["--output"]) == 0:
			out = append(out, pathArg{word: shellsafe.Word{Value: "."}, role: roleWrite})
		}
		if name == "patch" {
			all(roleWrite, vals["--directory"])
		}
		if name == "unzip" && hasShortFlag(args, ':') {
			out = append(out, opaqueArg("unzip -: extracts members named with .. or / wherever they point"))
		}
		for _, k := range []string{"-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form", "--json"} {
			if name != "curl" {
				continue
			}
			for _, w := range vals[k] {
				if _, f, ok := strings.Cut(w.Value, "@"); ok {
					f, _, _ = strings.Cut(f, ";")
					out = append(out, pathArg{word: shellsafe.Word{Value: f, Dynamic: w.Dynamic}, role: roleRead})
				}
			}
		}
		switch name {
		case "patch":
			all(roleWrite, ops)
		case "sort", "tree":
			all(roleRead, ops)
		}
	case "uniq", "xxd":
		short := "fsw"
		if name == "xxd" {
			short = "cglosn"
		}
		ops, _ := splitArgs(args, short, "skip-fields", "skip-chars", "check-chars", "group", "cols", "len", "seek", "name", "offset")
		if len(ops) > 1 {
			all(roleRead, ops[:1])
			all(roleWrite, ops[1:]) // the output (and any more, which they refuse)
		} else {
			all(roleRead, ops)
		}
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4":
		short := "S"
		if name == "zstd" || name == "unzstd" {
			short = "SoDT"
		}
		ops, vals := splitArgs(args, short, "suffix", "output-dir-flat", "output-dir-mirror", "dict", "patch-from", "threads")
		all(roleWrite, append(append(vals["-o"], vals["--output-dir-flat"]...), vals["--output-dir-mirror"]...))
		if hasShortFlag(args, 'c') || hasShortFlag(args, 't') || hasShortFlag(args, 'l') || hasLong(args, "--stdout") {
			all(roleRead, ops)
		} else {
			all(roleWrite, ops)
		}
	case "zip":
		ops, vals := splitArgs(args, "bntO", "out", "temp-path")
		all(roleWrite, append(vals["-O"], vals["--out"]...))
		if len(ops) > 0 {
			all(roleWrite, ops[:1])
			r := roleRead
			if hasShortFlag(args, 'm') || hasLong(args, "--move") {
				r = roleWrite // moved into the archive: deleted
			}
			all(r, ops[1:])
		}
	default:
		return nil, false
	}
	return out, true
}

// Option letters and names that take a value, per command.
var (
	writerShort = map[string]string{"touch": "drt", "mkdir": "m", "mkfifo": "m", "mknod": "m", "truncate": "sr", "shred": "ns"}
	copyShort   = map[string]string{"cp": "tS", "mv": "tS", "install": "tmogS", "scp": "cFiJlLoPS", "rsync": "efTB"}
	copyLong    = []string{"target-directory", "suffix", "mode", "owner", "group", "exclude", "include", "filter",
		"rsh", "rsync-path", "files-from", "exclude-from", "include-from", "partial-dir", "temp-dir", "backup-dir",
		"compare-dest", "copy-dest", "link-dest", "log-file", "password-file", "chmod", "chown", "usermap", "groupmap",
		"write-batch", "only-write-batch", "read-batch"}
	outShort = map[string]string{"sort": "okStT", "tree": "oILP", "curl": "odFHXAeuUTKcDbrmwxEC",
		"wget": "OoPaeiUT", "patch": "oipdrBDFVYz", "unzip": "dx"}
	outLong = []string{"output", "output-document", "directory-prefix", "cookie-jar", "dump-header", "output-dir",
		"append-output", "upload-file", "config", "input", "reject-file", "data", "data-binary", "data-raw",
		"data-urlencode", "form", "header", "user-agent", "request", "user", "referer", "key", "field-separator",
		"temporary-directory", "directory", "trace", "trace-ascii", "stderr", "etag-save", "libcurl", "alt-svc", "hsts",
		"save-cookies", "load-cookies", "warc-file", "post-file", "body-file", "json", "prefix", "proxy", "cert", "cacert"}
)

// splitArgs separates operands from options. Short options named in
// shortVal and long options in longVal take a value (the next argument,
// the rest of a cluster, or after =); vals holds them by option ("-t",
// "--target-directory").
func splitArgs(args []shellsafe.Word, shortVal string, longVal ...string) (ops []shellsafe.Word, vals map[string][]shellsafe.Word) {
	vals = map[string][]shellsafe.Word{}
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.Value
		switch {
		case w.Dynamic && !strings.HasPrefix(v, "-"):
			ops = append(ops, w)
		case v == "--":
			return append(ops, args[i+1:]...), vals
		case strings.HasPrefix(v, "--"):
			name, val, hasVal := strings.Cut(v, "=")
			full := longName(name, longVal) // --targ is --target-directory
			switch {
			case hasVal:
				vals[full] = append(vals[full], shellsafe.Word{Value: val, Dynamic: w.Dynamic, Glob: w.Glob})
			case contains(longVal, name[2:]) && i+1 < len(args):
				i++
				vals[name] = append(vals[name], args[i])
			case full != name && i+1 < len(args):
				// An abbreviation may also be of an option cairn does not
				// know that takes no value: the next word counts both as
				// the value and as an operand.
				vals[full] = append(vals[full], args[i+1])
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			for j := 1; j < len(v); j++ {
				if strings.IndexByte(shortVal, v[j]) < 0 {
					continue
				}
				key := "-" + v[j:j+1]
				if j+1 < len(v) {
					vals[key] = append(vals[key], shellsafe.Word{Value: v[j+1:], Dynamic: w.Dynamic, Glob: w.Glob})
				} else if i+1 < len(args) {
					i++
					vals[key] = append(vals[key], args[i])
				}
				break
			}
		default:
			ops = append(ops, w)
		}
	}
	return ops, vals
}

// localPaths drops the operands of scp and rsync that name another
// machine (host:path, rsync://…).
func localPaths(ws []shellsafe.Word) []shellsafe.Word {
	var out []shellsafe.Word
	for _, w := range ws {
		v := w.Value
		if strings.Contains(v, "://") {
			continue
		}
		if i := strings.IndexByte(v, ':'); i > 0 && !strings.Contains(v[:i], "/") {
			continue
		}
		out = append(out, w)
	}
	return out
}

func hasShortFlag(args []shellsafe.Word, letter byte) bool {
	for _, w := range args {
		v := w.Value
		if v == "--" {
			return false
		}
		if len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v[1:], letter) >= 0 {
			return true
		}
	}
	return false
}

// hasLong reports whether the long option name is given, whole or
// abbreviated to at least three letters (GNU programs take any
// unambiguous prefix).
func hasLong(args []shellsafe.Word, name string) bool {
	for _, w := range args {
		n, _, _ := strings.Cut(w.Value, "=")
		if n == name || len(n) >= 5 && strings.HasPrefix(n, "--") && strings.HasPrefix(name, n) {
			return true
		}
	}
	return false
}

func hasLongPrefix(args []shellsafe.Word, prefix string) bool {
	for _, w := range args {
		if strings.HasPrefix(w.Value, prefix) {
			return true
		}
	}
	return false
}

// hasAnyShortFlag reports whether one of letters is among the short
// options.
func hasAnyShortFlag(args []shellsafe.Word, letters string) bool {
	for i := range len(letters) {
		if hasShortFlag(args, letters[i]) {
			return true
		}
	}
	return false
}

// hasModeOption reports whether chmod's mode is written like an option
// (chmod -w, chmod -x+X): its letters are a mode's, not chmod's options
// (c, f, v, R, H, L, P).
func hasModeOption(args []shellsafe.Word) bool {
	for _, w := range args {
		v := w.Value
		if v == "--" {
			return false
		}
		if len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Trim(v[1:], "rwxXstugoa+-=,01234567") == "" {
			return true
		}
	}
	return false
}

// hasAttrOption reports whether chattr's attributes are written like an
// option (chattr -i FILE).
func hasAttrOption(args []shellsafe.Word) bool {
	for _, w := range args {
		if v := w.Value; len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Trim(v[1:], "aAcCdDeFijmPsStTux") == "" && v != "-R" && v != "-V" && v != "-f" {
			return true
		}
	}
	return false
}

// tarPaths: creating or appending writes the archive (-f) and reads the
// members (deletes them with --remove-files); extracting writes into -C
// (or the working directory), anywhere with -P; listing only reads. A
// mode cairn cannot tell is taken to write both.
func tarPaths(args []shellsafe.Word) []pathArg {
	var out []pathArg
	if len(args) == 0 {
		return nil
	}
	// The first argument may be a cluster without a dash: tar czf out.tgz.
	first := args[0].Value
	if !strings.HasPrefix(first, "-") && !args[0].Dynamic {
		args = append([]shellsafe.Word{{Value: "-" + first}}, args[1:]...)
	}
	const short = "fCTXbHgKLNVIF"
	ops, vals := splitArgs(args, short, tarLong...)
	mode := byte(0)
	absolute := false
	for _, w := range args {
		v := w.Value
		if strings.HasPrefix(v, "--") {
			name, _, _ := strings.Cut(v, "=")
			switch longName(name, tarModes) {
			case "--create", "--append", "--update", "--concatenate", "--catenate", "--delete":
				mode = 'c'
			case "--extract", "--get":
				mode = 'x'
			case "--list", "--diff", "--compare", "--test-label":
				if mode == 0 {
					mode = 't'
				}
			}
			if longName(name, []string{"absolute-names"}) == "--absolute-names" {
				absolute = true
			}
			continue
		}
		if len(v) > 1 && v[0] == '-' {
		cluster:
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'c', 'r', 'u', 'A':
					mode = 'c'
				case 'x':
					mode = 'x'
				case 't', 'd':
					if mode == 0 {
						mode = 't'
					}
				case 'P':
					absolute = true
				}
				if strings.IndexByte(short, v[j]) >= 0 {
					break cluster // the rest is the option's value
				}
			}
		}
	}
	for _, k := range []string{"--to-command", "--checkpoint-action", "--info-script", "--new-volume-script", "-F", "--rsh-command", "--rmt-command", "--use-compress-program", "-I"} {
		for _, w := range vals[k] {
			if k == "--checkpoint-action" && !strings.HasPrefix(w.Value, "exec") {
				continue
			}
			if (k == "-I" || k == "--use-compress-program") && !pathLike(w.Value) && !strings.ContainsAny(w.Value, " ;|&$`") {
				continue // a compressor by name: zstd, pigz
			}
			out = append(out, opaqueArg("tar "+k+" runs "+strings.Fields(w.Value + " ?")[0]+", whose writes cairn cannot follow"))
		}
	}
	archive := append(vals["-f"], vals["--file"]...)
	dirsC := append(vals["-C"], vals["--directory"]...)
	for _, k := range []string{"--index-file", "-g", "--listed-incremental", "--volno-file"} {
		for _, w := range vals[k] {
			out = append(out, pathArg{word: w, role: roleWrite})
		}
	}
	members := roleRead
	if hasLong(args, "--remove-files") {
		members = roleWrite
	}
	if mode == 'x' || mode == 0 {
		if len(dirsC) == 0 {
			dirsC = []shellsafe.Word{{Value: "."}}
		}
		for _, w := range dirsC {
			out = append(out, pathArg{word: w, role: roleWrite})
		}
		if absolute {
			out = append(out, opaqueArg("tar -P extracts members named with / or .. wherever they point"))
		}
	}
	switch mode {
	case 'c', 0:
		for _, w := range archive {
			out = append(out, pathArg{word: w, role: roleWrite})
		}
		for _, w := range ops {
			out = append(out, pathArg{word: w, role: members})
		}
	default:
		for _, w := range archive {
			out = append(out, pathArg{word: w, role: roleRead})
		}
	}
	return out
}

// tar's long options that take a value, and its modes.
var (
	tarLong = []string{"file", "directory", "files-from", "exclude-from", "exclude", "transform", "xform", "use-compress-program",
		"to-command", "owner", "group", "mode", "newer", "after-date", "format", "label", "one-top-level", "index-file",
		"listed-incremental", "volno-file", "checkpoint-action", "info-script", "new-volume-script", "rsh-command", "rmt-command"}
	tarModes = []string{"create", "append", "update", "concatenate", "catenate", "delete", "extract", "get", "list", "diff", "compare", "test-label"}
)

// longName is the long option name as written ("--ext"), or the one
// of names it abbreviates ("--extract"), as GNU programs take any
// unambiguous prefix.
func longName(name string, names []string) string {
	n, ok := strings.CutPrefix(name, "--")
	if !ok || n == "" {
		return name
	}
	match := ""
	for _, x := range names {
		if x == n {
			return name
		}
		if strings.HasPrefix(x, n) && match == "" {
			match = x
		}
	}
	if match != "" {
		return "--" + match
	}
	return name
}

// gitPaths: git works in -C DIR (and --git-dir, --work-tree); a git
// command that changes things writes there. clone, init and worktree add
// write their directory operand.
func gitPaths(c *shellsafe.Command, args []shellsafe.Word) []pathArg {
	var out []pathArg
	readOnly := shellsafe.ClassifyCommand(bare(c)).ReadOnly
	r := roleRead
	if !readOnly {
		r = roleWrite
	}
	var dirs []string
	i := 0
	for ; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "-C" && i+1 < len(args):
			i++
			d := args[i]
			if len(dirs) > 0 && !d.Dynamic && !filepath.IsAbs(d.Value) && !strings.HasPrefix(d.Value, "~") {
				d.Value = path.Join(dirs[len(dirs)-1], d.Value) // -C is cumulative
			}
			dirs = append(dirs, d.Value)
			out = append(out, pathArg{word: d, role: r})
		case strings.HasPrefix(v, "--git-dir=") || strings.HasPrefix(v, "--work-tree="):
			_, val, _ := strings.Cut(v, "=")
			out = append(out, pathArg{word: shellsafe.Word{Value: val, Dynamic: args[i].Dynamic}, role: r})
		case (v == "--git-dir" || v == "--work-tree") && i+1 < len(args):
			i++
			out = append(out, pathArg{word: args[i], role: r})
		case (v == "--namespace" || v == "--exec-path" || v == "--super-prefix" || v == "--list-cmds") && i+1 < len(args):
			i++
		case v == "-c" && i+1 < len(args), strings.HasPrefix(v, "-c") && len(v) > 2, v == "--config-env" && i+1 < len(args), strings.HasPrefix(v, "--config-env="):
			cfg := strings.TrimPrefix(strings.TrimPrefix(v, "--config-env="), "-c")
			if v == "-c" || v == "--config-env" {
				i++
				cfg = args[i].Value
			}
			if gitRunsCommand(cfg) {
				out = append(out, opaqueArg("git -c "+cfg+" sets configuration that runs a program"))
			}
		case strings.HasPrefix(v, "-"):
		default:
			goto sub
		}
	}
sub:
	if i >= len(args) {
		return out
	}
	rest := args[i+1:]
	ops, vals := splitArgs(rest, "bcoujmO", "branch", "origin", "template", "separate-git-dir", "reference", "depth", "config", "upload-pack", "output", "output-directory")
	base := ""
	if len(dirs) > 0 {
		base = dirs[len(dirs)-1]
	}
	under := func(w shellsafe.Word) shellsafe.Word {
		if base != "" && !w.Dynamic && !filepath.IsAbs(w.Value) && !strings.HasPrefix(w.Value, "~") {
			w.Value = path.Join(base, w.Value)
		}
		return w
	}
	sub := args[i].Value
	// Options of any subcommand that write a file: --output (diff, log,
	// show …), -o of archive and format-patch, --separate-git-dir.
	for _, k := range []string{"--output", "--output-directory", "--separate-git-dir"} {
		for _, w := range vals[k] {
			out = append(out, pathArg{word: under(w), role: roleWrite})
		}
	}
	if sub == "archive" || sub == "format-patch" {
		for _, w := range vals["-o"] {
			out = append(out, pathArg{word: under(w), role: roleWrite})
		}
	}
	switch sub {
	case "clone":
		if len(ops) >= 2 {
			out = append(out, pathArg{word: under(ops[len(ops)-1]), role: roleWrite})
		} else {
			out = append(out, pathArg{word: under(shellsafe.Word{Value: "."}), role: roleWrite}) // a folder named after the repository, here
		}
	case "init":
		for _, w := range ops {
			out = append(out, pathArg{word: under(w), role: roleWrite})
		}
		if len(ops) == 0 {
			out = append(out, pathArg{word: under(shellsafe.Word{Value: "."}), role: roleWrite})
		}
	case "worktree":
		if len(ops) >= 2 && (ops[0].Value == "add" || ops[0].Value == "move") {
			for _, w := range ops[1:] {
				out = append(out, pathArg{word: under(w), role: roleWrite})
			}
		}
	default:
		for _, w := range rest {
			role := roleRead
			if !readOnly && pathLike(w.Value) {
				role = roleMaybe
			}
			out = append(out, pathArg{word: under(w), role: role})
		}
	}
	return out
}

// gitRunsCommand reports whether a git configuration setting (key=value)
// names a program git runs: a pager, an editor, hooks, an ssh command, a
// filter, an alias to a shell command.
func gitRunsCommand(kv string) bool {
	key, val, _ := strings.Cut(strings.ToLower(kv), "=")
	if strings.HasPrefix(key, "alias.") {
		return strings.HasPrefix(strings.TrimSpace(val), "!")
	}
	for _, k := range []string{"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.hookspath", "core.askpass",
		"sequence.editor", "diff.external", "gpg.program", "credential.helper", "core.gitproxy", "uploadpack.packobjectshook", "pager."} {
		if key == k || strings.HasSuffix(k, ".") && strings.HasPrefix(key, k) {
			return true
		}
	}
	for _, suf := range []string{".command", ".textconv", ".clean", ".smudge", ".process", ".cmd", ".program", ".helper", ".tool", ".path", ".sshcommand"} {
		if strings.HasSuffix(key, suf) {
			return true
		}
	}
	return false
}

// findPaths: find reads its starting points, and writes below them with
// -delete or an -exec (-execdir, -ok, -okdir) whose command changes
// things; -fprint and the like write their file.
func findPaths(c *shellsafe.Command, args []shellsafe.Word) []pathArg {
	var out []pathArg
	i := 0
	// The options before the starting points: -H, -L, -P, -D debug, -O3.
	for i < len(args) {
		v := args[i].Value
		if v == "-H" || v == "-L" || v == "-P" || strings.HasPrefix(v, "-O") && len(v) > 2 {
			i++
			continue
		}
		if v == "-D" && i+1 < len(args) {
			i += 2
			continue
		}
		break
	}
	args = args[i:]
	i = 0
	for ; i < len(args); i++ {
		v := args[i].Value
		if strings.HasPrefix(v, "-") && v != "-" || v == "(" || v == "!" {
			break
		}
	}
	starts := args[:i]
	if len(starts) == 0 {
		starts = []shellsafe.Word{{Value: "."}}
	}
	r := roleRead
	for _, in := range c.Inner {
		if !shellsafe.ClassifyCommand(bare(in)).ReadOnly {
			r = roleWrite // the found files are handed to a writer
		}
	}
	for j := i; j < len(args); j++ {
		switch args[j].Value {
		case "-delete":
			r = roleWrite
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if j+1 < len(args) {
				out = append(out, pathArg{word: args[j+1], role: roleWrite})
			}
		}
	}
	for _, w := range starts {
		out = append(out, pathArg{word: w, role: r})
	}
	return out
}

// sedPaths: sed reads its files, writes them with -i, and its script
// may write files (the w and W commands, the s command's w flag), read
// them (r, R) or run commands (e, the s command's e flag). A script from
// a file (-f) cannot be followed.
func sedPaths(args []shellsafe.Word) []pathArg {
	var out []pathArg
	ops, vals := splitArgs(args, "efl", "expression", "file", "line-length")
	scripts := append(vals["-e"], vals["--expression"]...)
	fromFile := len(vals["-f"])+len(vals["--file"]) > 0
	if len(scripts) == 0 && !fromFile && len(ops) > 0 {
		scripts, ops = ops[:1], ops[1:]
	}
	files := roleRead
	if hasShortFlag(args, 'i') || hasLongPrefix(args, "--in-place") {
		files = roleWrite
	}
	for _, w := range ops {
		out = append(out, pathArg{word: w, role: files})
	}
	if fromFile {
		return append(out, opaqueArg("its sed script comes from a file, which may write files or run commands"))
	}
	for _, sc := range scripts {
		if sc.Dynamic {
			out = append(out, opaqueArg("its sed script is only known when it runs"))
			continue
		}
		writes, reads, runs := sedScript(sc.Value)
		if runs {
			out = append(out, opaqueArg("its sed script runs commands (e)"))
		}
		for _, f := range writes {
			out = append(out, pathArg{word: shellsafe.Word{Value: f}, role: roleWrite})
		}
		for _, f := range reads {
			out = append(out, pathArg{word: shellsafe.Word{Value: f}, role: roleRead})
		}
	}
	return out
}

// awkPaths: awk reads its files; its program may write files (print >
// "file"), run commands (system(), print | "cmd", "cmd" | getline) or
// read files (getline < "file"). A program from a file (-f) and gawk's
// in-place editing cannot be followed or write the files.
func awkPaths(args []shellsafe.Word) []pathArg {
	var out []pathArg
	ops, vals := splitArgs(args, "fvFEi", "file", "assign", "field-separator", "exec", "include", "load")
	fromFile := len(vals["-f"])+len(vals["--file"])+len(vals["-E"])+len(vals["--exec"]) > 0
	var prog []shellsafe.Word
	if !fromFile && len(ops) > 0 {
		prog, ops = ops[:1], ops[1:]
	}
	files := roleRead
	for _, w := range append(vals["-i"], vals["--include"]...) {
		if w.Value == "inplace" {
			files = roleWrite
		}
	}
	for _, w := range ops {
		if !w.Dynamic && isAssignWord(w.Value) {
			continue // var=value between the files
		}
		out = append(out, pathArg{word: w, role: files})
	}
	if fromFile {
		return append(out, opaqueArg("its awk program comes from a file, which may write files or run commands"))
	}
	for _, p := range prog {
		if p.Dynamic {
			return append(out, opaqueArg("its awk program is only known when it runs"))
		}
		writes, reads, runs := awkProgram(p.Value)
		if runs != "" {
			out = append(out, opaqueArg("its awk program "+runs))
		}
		for _, f := range writes {
			out = append(out, pathArg{word: shellsafe.Word{Value: f}, role: roleWrite})
		}
		for _, f := range reads {
			out = append(out, pathArg{word: shellsafe.Word{Value: f}, role: roleRead})
		}
	}
	return out
}

// isAssignWord reports whether an awk operand is an assignment (x=1).
func isAssignWord(v string) bool {
	name, _, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// awkProgram finds what an awk program writes and reads, and says what it
// runs ("" for nothing). In a print or printf statement, > and >> send
// the output to a file and | to a command; a target that is not a plain
// string counts as writing a file named at run time.
func awkProgram(p string) (writes, reads []string, runs string) {
	n := len(p)
	inPrint, getline, depth := false, false, 0
	// str reads the string literal at i; ok is false when there is none.
	str := func(i int) (string, int, bool) {
		for i < n && (p[i] == ' ' || p[i] == '\t') {
			i++
		}
		if i >= n || p[i] != '"' {
			return "", i, false
		}
		var b strings.Builder
		for i++; i < n && p[i] != '"'; i++ {
			if p[i] == '\\' && i+1 < n {
				i++
			}
			b.WriteByte(p[i])
		}
		return b.String(), i + 1, i < n
	}
	word := func(i int) string {
		j := i
		for j < n && (p[j] == '_' || p[j] >= 'a' && p[j] <= 'z' || p[j] >= 'A' && p[j] <= 'Z' || p[j] >= '0' && p[j] <= '9') {
			j++
		}
		return p[i:j]
	}
	for i := 0; i < n; {
		c := p[i]
		switch {
		case c == '"':
			_, j, _ := str(i)
			i = j
			continue
		case c == '#':
			for i < n && p[i] != '\n' {
				i++
			}
			continue
		case c == ';' || c == '\n' || c == '{' || c == '}':
			inPrint, getline, depth = false, false, 0
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '|' && i+1 < n && p[i+1] == '|':
			i += 2
			continue
		case c == '|':
			if rest := strings.TrimLeft(p[i+1:], " \t"); strings.HasPrefix(rest, "getline") || strings.HasPrefix(rest, "&") || inPrint {
				return writes, reads, "runs a command through a pipe"
			}
		case c == '>' && inPrint && depth == 0:
			i++
			if i < n && p[i] == '>' {
				i++
			}
			f, j, ok := str(i)
			if !ok {
				return writes, reads, "writes a file named only when it runs"
			}
			if f != "/dev/stdout" && f != "/dev/stderr" && f != "-" {
				writes = append(writes, f)
			}
			i = j
			continue
		case c == '<' && getline: // getline [var] < "file"
			f, j, ok := str(i + 1)
			if !ok {
				return writes, reads, "reads a file named only when it runs"
			}
			reads = append(reads, f)
			i = j
			continue
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			w := word(i)
			switch w {
			case "print", "printf":
				inPrint, depth = true, 0
			case "getline":
				getline = true
			case "system":
				return writes, reads, "runs a command (system)"
			}
			i += len(w)
			continue
		}
		i++
	}
	return writes, reads, ""
}

// sedScript finds the files a sed script writes and reads, and whether it
// runs commands. It follows sed's grammar far enough to find every
// command letter; what it cannot follow counts as running commands.
func sedScript(sc string) (writes, reads []string, runs bool) {
	i := 0
	n := len(sc)
	skipSpace := func() {
		for i < n && (sc[i] == ' ' || sc[i] == '\t') {
			i++
		}
	}
	// delimited skips a delimited part (a regex, a replacement) from the
	// delimiter at i; false when it does not end.
	delimited := func() bool {
		if i >= n {
			return false
		}
		d := sc[i]
		if d == '\n' || d == '\\' {
			return false
		}
		for i++; i < n; i++ {
			switch sc[i] {
			case '\\':
				i++
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			}
		}
		return false
	}
	restOfLine := func() string {
		start := i
		for i < n && sc[i] != '\n' {
			i++
		}
		return strings.TrimSpace(sc[start:i])
	}
	address := func() bool {
		switch {
		case i < n && sc[i] == '/':
			if !delimited() {
				return false
			}
			for i < n && (sc[i] == 'I' || sc[i] == 'M') {
				i++
			}
		case i+1 < n && sc[i] == '\\':
			i++
			if !delimited() {
				return false
			}
		default:
			for i < n && (sc[i] >= '0' && sc[i] <= '9' || sc[i] == '$' || sc[i] == '~' || sc[i] == '+') {
				i++
			}
		}
		return true
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;{}", sc[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		if sc[i] == '#' {
			restOfLine()
			continue
		}
		if !address() {
			return writes, reads, true
		}
		skipSpace()
		if i < n && sc[i] == ',' {
			i++
			skipSpace()
			if !address() {
				return writes, reads, true
			}
		}
		skipSpace()
		for i < n && sc[i] == '!' {
			i++
			skipSpace()
		}
		if i >= n {
			break
		}
		cmd := sc[i]
		i++
		switch cmd {
		case '{', '}', ';', '\n':
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'l', 'n', 'N', 'p', 'P', 'x', 'z', 'F', 'q', 'Q', 'L':
			// No file; q and Q may take an exit code, l a length.
			for i < n && sc[i] >= '0' && sc[i] <= '9' {
				i++
			}
		case ':', 'b', 't', 'T', 'v':
			for i < n && sc[i] != ';' && sc[i] != '\n' && sc[i] != '}' {
				i++
			}
		case 'a', 'i', 'c':
			restOfLine() // text
		case 'w', 'W':
			if f := restOfLine(); f != "/dev/stdout" && f != "/dev/stderr" {
				writes = append(writes, f)
			}
		case 'r', 'R':
			reads = append(reads, restOfLine())
		case 'e':
			return writes, reads, true
		case 'y': // y/abc/xyz/
			if !delimited() {
				return writes, reads, true
			}
			i--
			if !delimited() {
				return writes, reads, true
			}
		case 's':
			if !delimited() {
				return writes, reads, true
			}
			i--
			if !delimited() {
				return writes, reads, true
			}
			// Flags: g, p, i, I, m, M, a number, e, w FILE.
		flags:
			for i < n {
				switch f := sc[i]; {
				case f == 'w':
					i++
					if f := restOfLine(); f != "/dev/stdout" && f != "/dev/stderr" {
						writes = append(writes, f)
					}
					break flags
				case f == 'e':
					return writes, reads, true
				case strings.IndexByte("gpiImM0123456789", f) >= 0:
					i++
				default:
					break flags
				}
			}
		default:
			return writes, reads, true // not a command cairn knows
		}
	}
	return writes, reads, false
}

// lineRule is the rule that would allow exactly this line; "" for a line
// too long to make a rule of.
func (b *bashCheck) lineRule() string {
	if len(b.line) > 1000 || strings.IndexByte(b.line, 0) >= 0 {
		return ""
	}
	return "Bash(" + b.line + ")"
}

// clip shortens a command line for a message.
func clip(line string) string {
	const max = 200
	line = strings.ReplaceAll(line, "\x00", `\0`)
	if len(line) <= max {
		return line
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + "…"
}
