package shellsafe

import "strings"

// gitReadOnly are the git subcommands that only read the repository.
var gitReadOnly = set(
	"status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame",
	"annotate", "describe", "shortlog", "cat-file", "merge-base", "name-rev",
	"whatchanged", "count-objects", "cherry", "for-each-ref", "show-ref",
	"show-branch", "version", "help", "grep", "rev-list", "check-ignore",
	"check-attr", "var", "ls-remote", "diff-tree", "diff-files", "diff-index",
	"range-diff", "verify-commit", "verify-tag", "fsck",
)

// gitWriting are options of read-only subcommands that write a file or
// run a program.
var gitWriting = []string{"--output", "-O", "--open-files-in-pager", "--ext-diff", "--textconv"}

// classifyGit classifies git [global options] SUBCOMMAND [args].
func classifyGit(args []string) Class {
	sub, rest, why := gitSubcommand(args)
	if why != "" {
		return Class{Why: why}
	}
	if f, ok := gitSubs[sub]; ok {
		return f(rest)
	}
	if gitReadOnly[sub] {
		for _, a := range rest {
			name, _, _ := strings.Cut(a, "=")
			if contains(gitWriting, name) || strings.HasPrefix(a, "-O") {
				return Class{Why: "git " + sub + " " + name + " writes a file or runs a program"}
			}
		}
		return Class{ReadOnly: true}
	}
	return Class{Why: "git " + sub + " changes the repository"}
}

// gitSubcommand skips git's global options. why is set when an option
// makes the command unpredictable (-c can run any program through
// configuration).
func gitSubcommand(args []string) (sub string, rest []string, why string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || strings.HasPrefix(a, "--config-env") || (strings.HasPrefix(a, "-c") && !strings.HasPrefix(a, "--")):
			return "", nil, "git -c sets configuration that can run any program"
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--exec-path" && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a, args[i+1:], ""
		}
	}
	return "help", nil, ""
}

var gitSubs = map[string]func(args []string) Class{
	"branch":        gitBranch,
	"tag":           gitTag,
	"remote":        gitList("remote", "show", "get-url"),
	"stash":         gitStash,
	"reflog":        gitReflog,
	"worktree":      gitWorktree,
	"config":        gitConfig,
	"reset":         gitReset,
	"clean":         gitClean,
	"checkout":      gitCheckout,
	"restore":       gitRestore,
	"switch":        gitIf("git switch --discard-changes throws away local changes", "-f", "--force", "--discard-changes"),
	"push":          gitPush,
	"update-ref":    gitIf("git update-ref -d deletes a ref", "-d"),
	"gc":            gitIf("git gc --prune=now deletes unreachable objects", "--prune"),
	"prune":         gitAlways("git prune deletes unreachable objects"),
	"filter-branch": gitAlways("git filter-branch rewrites history"),
	"filter-repo":   gitAlways("git filter-repo rewrites history"),
	"rm":            gitIf("git rm -f deletes files with their local changes", "-f", "--force"),
}

func gitAlways(why string) func([]string) Class {
	return func([]string) Class { return Class{Destructive: true, Why: why} }
}

// gitIf: changes the repository; destructive with one of the options.
func gitIf(why string, opts ...string) func([]string) Class {
	return func(args []string) Class {
		for _, a := range args {
			name, _, _ := strings.Cut(a, "=")
			if contains(opts, name) {
				return Class{Destructive: true, Why: why}
			}
		}
		return Class{Why: "git changes the repository"}
	}
}

// gitList: read-only with no arguments, -v, or one of the listing
// subcommands.
func gitList(name string, listing ...string) func([]string) Class {
	return func(args []string) Class {
		ops := operands(args)
		if len(ops) == 0 || contains(listing, ops[0]) {
			return Class{ReadOnly: true}
		}
		return Class{Why: "git " + name + " " + ops[0] + " changes the repository"}
	}
}

func gitBranch(args []string) Class {
	if hasFlag(args, "-D") || (hasFlag(args, "-d", "--delete") && (hasFlag(args, "--force") || hasShort(args, 'f'))) {
		return Class{Destructive: true, Why: "git branch -D deletes a branch that may not be merged"}
	}
	if hasFlag(args, "-M", "-C") {
		return Class{Destructive: true, Why: "git branch -M/-C overwrites an existing branch"}
	}
	for _, a := range args {
		if contains([]string{"-d", "--delete", "-m", "--move", "-c", "--copy", "-f", "--force", "-u", "--set-upstream-to", "--unset-upstream", "--edit-description", "-t", "--track"}, strings.SplitN(a, "=", 2)[0]) {
			return Class{Why: "git branch " + a + " changes branches"}
		}
	}
	if len(operands(args)) > 0 && !hasFlag(args, "-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at") {
		return Class{Why: "git branch NAME creates a branch"}
	}
	return Class{ReadOnly: true}
}

func gitTag(args []string) Class {
	if hasFlag(args, "-d", "--delete", "-f", "--force") {
		return Class{Destructive: true, Why: "git tag -d/-f deletes or moves a tag"}
	}
	if len(operands(args)) == 0 || hasFlag(args, "-l", "--list", "--contains", "--points-at", "--merged") {
		return Class{ReadOnly: true}
	}
	return Class{Why: "git tag NAME creates a tag"}
}

func gitStash(args []string) Class {
	ops := operands(args)
	switch {
	case len(ops) > 0 && (ops[0] == "list" || ops[0] == "show"):
		return Class{ReadOnly: true}
	case len(ops) > 0 && (ops[0] == "drop" || ops[0] == "clear"):
		return Class{Destructive: true, Why: "git stash " + ops[0] + " throws stashed changes away"}
	}
	return Class{Why: "git stash changes the working tree"}
}

func gitReflog(args []string) Class {
	ops := operands(args)
	switch {
	case len(ops) == 0 || ops[0] == "show" || ops[0] == "exists":
		return Class{ReadOnly: true}
	case ops[0] == "expire" || ops[0] == "delete":
		return Class{Destructive: true, Why: "git reflog " + ops[0] + " deletes history that recovery relies on"}
	}
	return Class{Why: "git reflog changes the repository"}
}

func gitWorktree(args []string) Class {
	ops := operands(args)
	switch {
	case len(ops) > 0 && ops[0] == "list":
		return Class{ReadOnly: true}
	case len(ops) > 0 && ops[0] == "remove" && hasFlag(args, "-f", "--force"):
		return Class{Destructive: true, Why: "git worktree remove --force deletes a worktree with its changes"}
	}
	return Class{Why: "git worktree changes worktrees"}
}

func gitConfig(args []string) Class {
	ops := operands(args)
	if hasFlag(args, "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l") ||
		(len(ops) > 0 && (ops[0] == "get" || ops[0] == "list")) ||
		(len(ops) == 1 && !hasFlag(args, "--unset", "--unset-all", "--add", "--replace-all", "--remove-section", "--rename-section", "-e", "--edit")) {
		return Class{ReadOnly: true}
	}
	return Class{Why: "git config changes configuration"}
}

func gitReset(args []string) Class {
	if hasFlag(args, "--hard", "--merge") {
		return Class{Destructive: true, Why: "git reset --hard throws away uncommitted changes"}
	}
	return Class{Why: "git reset moves the branch or the index"}
}

func gitClean(args []string) Class {
	if hasFlag(args, "-n", "--dry-run") || hasShort(args, 'n') {
		return Class{ReadOnly: true}
	}
	if hasFlag(args, "--force") || hasShort(args, 'f') {
		return Class{Destructive: true, Why: "git clean -f deletes untracked files"}
	}
	return Class{Why: "git clean deletes untracked files"}
}

func gitCheckout(args []string) Class {
	for _, a := range args {
		if a == "--" || a == "." || a == "-f" || a == "--force" || a == "-p" || a == "--patch" {
			return Class{Destructive: true, Why: "git checkout " + a + " throws away local changes"}
		}
	}
	return Class{Why: "git checkout changes the working tree"}
}

func gitRestore(args []string) Class {
	staged := hasFlag(args, "--staged") || hasShort(args, 'S')
	worktree := hasFlag(args, "--worktree") || hasShort(args, 'W')
	if staged && !worktree {
		return Class{Why: "git restore --staged changes the index"}
	}
	return Class{Destructive: true, Why: "git restore throws away local changes"}
}

func gitPush(args []string) Class {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch {
		case contains([]string{"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune"}, name),
			len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "fd"),
			strings.HasPrefix(a, "+") || strings.HasPrefix(a, ":"):
			return Class{Destructive: true, Why: "git push " + a + " can overwrite or delete remote history"}
		}
	}
	return Class{Why: "git push changes the remote"}
}
