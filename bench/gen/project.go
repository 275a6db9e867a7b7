package gen

import (
	"fmt"
	"strings"
)

// file is a source file of the project the session works on.
type file struct {
	path, rel, pkg string
	lines          []string
	cached         string
}

// text is the file's content, ending with a newline.
func (f *file) text() string {
	if f.cached == "" {
		f.cached = strings.Join(f.lines, "\n") + "\n"
	}
	return f.cached
}

// newProject invents the files of the project.
func (g *generator) newProject() {
	seen := make(map[string]bool)
	for len(g.files) < 48 {
		pkg := g.pick(packages)
		name := g.pick(nouns)
		if g.chance(0.4) {
			name += "_" + g.pick(nouns)
		}
		if g.chance(0.3) {
			name += "_test"
		}
		rel := pkg + "/" + name + ".go"
		if seen[rel] {
			continue
		}
		seen[rel] = true
		f := &file{path: CWD + "/" + rel, rel: rel, pkg: pkg}
		f.lines = g.source(pkg)
		g.files = append(g.files, f)
	}
}

// source invents a Go file of a few dozen to several hundred lines.
func (g *generator) source(pkg string) []string {
	base := pkg[strings.LastIndexByte(pkg, '/')+1:]
	lines := []string{
		"// Package " + base + " " + g.words(6+g.rng.IntN(8)) + ".",
		"package " + base,
		"",
		"import (",
		"\t\"context\"",
		"\t\"errors\"",
		"\t\"fmt\"",
		")",
		"",
	}
	typ := title(g.pick(nouns))
	lines = append(lines, "// "+typ+" "+g.words(5+g.rng.IntN(10))+".", "type "+typ+" struct {")
	for range 2 + g.rng.IntN(6) {
		lines = append(lines, "\t"+g.pick(nouns)+" "+g.pick(goTypes))
	}
	lines = append(lines, "}", "")
	var funcs int
	switch r := g.rng.Float64(); {
	case r < 0.55:
		funcs = 2 + g.rng.IntN(5)
	case r < 0.92:
		funcs = 6 + g.rng.IntN(9)
	default:
		funcs = 15 + g.rng.IntN(16)
	}
	for range funcs {
		fn := title(g.pick(verbs)) + title(g.pick(nouns))
		arg := g.pick(nouns)
		lines = append(lines,
			"// "+fn+" "+g.words(6+g.rng.IntN(10))+".",
			fmt.Sprintf("func (x *%s) %s(ctx context.Context, %s %s) error {", typ, fn, arg, g.pick(goTypes)))
		for range 2 + g.rng.IntN(10) {
			lines = append(lines, strings.Split(g.statement(arg), "\n")...)
		}
		lines = append(lines, "\treturn nil", "}", "")
	}
	return lines[:len(lines)-1]
}

// statement invents a few lines of a function body.
func (g *generator) statement(arg string) string {
	a, b, v := g.pick(nouns), g.pick(nouns), g.pick(verbs)
	switch g.rng.IntN(9) {
	case 0:
		return fmt.Sprintf("\tif err := x.%s.%s(ctx, %s); err != nil {\n\t\treturn fmt.Errorf(\"%s %%q: %%w\", %s, err)\n\t}", a, title(v), arg, v, arg)
	case 1:
		return fmt.Sprintf("\t%s := x.%s[%s]", a, b, arg)
	case 2:
		return fmt.Sprintf("\tfor _, %s := range x.%s {\n\t\tif %s == nil {\n\t\t\tcontinue\n\t\t}\n\t\t%s.%s(ctx)\n\t}", a, b, a, a, title(v))
	case 3:
		return "\t// " + g.sentences(1)
	case 4:
		return fmt.Sprintf("\tif %s == nil {\n\t\treturn errors.New(\"%s: no %s\")\n\t}", arg, v, b)
	case 5:
		return fmt.Sprintf("\tx.%s = append(x.%s, %s)", a, a, arg)
	case 6:
		return fmt.Sprintf("\tfmt.Fprintf(x.%s, \"%s %%s\\n\", %s)", a, v, arg)
	case 7:
		return fmt.Sprintf("\tswitch %s {\n\tcase \"%s\":\n\t\tx.%s++\n\tdefault:\n\t\tx.%s--\n\t}", arg, b, a, a)
	default:
		return fmt.Sprintf("\t%s, ok := x.%s.Load(%s)\n\tif !ok {\n\t\treturn ErrNo%s\n\t}", a, b, arg, title(b))
	}
}

// Prose.

// words strings n words together.
func (g *generator) words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		zh := g.chinese()
		switch g.rng.IntN(4) {
		case 0:
			b.WriteString(g.pickIn(zh, verbs, zhVerbs))
		case 1:
			b.WriteString(g.pickIn(zh, nouns, zhNouns))
		default:
			b.WriteString(g.pickIn(zh, fillers, zhFillers))
		}
	}
	return b.String()
}

// sentences writes n sentences of the kind a model writes while working.
func (g *generator) sentences(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		zh := g.chinese()
		s := g.pickIn(zh, sentenceForms, zhSentenceForms)
		s = strings.Replace(s, "%v", g.pickIn(zh, verbs, zhVerbs), 1)
		s = strings.Replace(s, "%n", g.pickIn(zh, nouns, zhNouns), 1)
		s = strings.Replace(s, "%f", g.someFile(), 1)
		s = strings.Replace(s, "%n", g.pickIn(zh, nouns, zhNouns), 1)
		b.WriteString(s)
	}
	return b.String()
}

// chinese reports whether the next piece of prose is in Chinese (see
// Options.Chinese). With none asked, it draws nothing from the generator's
// randomness, so the output is what it was before the option.
func (g *generator) chinese() bool {
	return g.opts.Chinese > 0 && g.chance(g.opts.Chinese)
}

// pickIn picks from zh when zh is set, else from en.
func (g *generator) pickIn(zh bool, en, zhList []string) string {
	if zh {
		return g.pick(zhList)
	}
	return g.pick(en)
}

// someFile names a file of the project, or its README while the project
// is being made.
func (g *generator) someFile() string {
	if len(g.files) == 0 {
		return "README.md"
	}
	return g.files[g.rng.IntN(len(g.files))].rel
}

// bullets writes a short list of files touched.
func (g *generator) bullets() string {
	var b strings.Builder
	for i := range 2 + g.rng.IntN(5) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- `" + g.someFile() + "`: " + g.sentences(1))
	}
	return b.String()
}

// prompt writes what the user asks in a turn.
func (g *generator) prompt() string {
	zh := g.chinese()
	s := g.pickIn(zh, promptForms, zhPromptForms)
	s = strings.Replace(s, "%v", g.pickIn(zh, verbs, zhVerbs), 1)
	s = strings.Replace(s, "%n", g.pickIn(zh, nouns, zhNouns), 1)
	s = strings.Replace(s, "%f", g.someFile(), 1)
	s = strings.Replace(s, "%n", g.pickIn(zh, nouns, zhNouns), 1)
	if g.chance(0.2) {
		s += "\n\n" + g.sentences(2+g.rng.IntN(4))
	}
	return s
}

// summary writes the text of a compaction summary.
func (g *generator) summary() string {
	var b strings.Builder
	b.WriteString("This session continues an earlier conversation that no longer fits in the context window. The summary below stands in for the earlier part.\n\nSummary:\n")
	for i, h := range summaryHeads {
		fmt.Fprintf(&b, "%d. %s:\n", i+1, h)
		for range 1 + g.rng.IntN(5) {
			b.WriteString("   - " + g.sentences(1+g.rng.IntN(2)) + "\n")
		}
	}
	b.WriteString("\nThe full transcript of the earlier part is at /home/user/.claude/projects/-home-user-acme-api/" + g.sessionID + ".jsonl if exact details are needed.\nPick up the work where it stopped, without asking the user anything further and without recapping.")
	return b.String()
}

// title capitalises the first letter of s.
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Vocabulary.

var (
	packages = []string{"api", "auth", "billing", "cmd/server", "config", "internal/cache", "internal/queue", "report", "store", "worker"}
	nouns    = []string{"account", "batch", "cache", "client", "config", "cursor", "deadline", "entry", "event", "handler", "index", "invoice", "lease", "limit", "order", "payload", "payment", "queue", "record", "report", "request", "retry", "route", "schema", "session", "shard", "snapshot", "tenant", "ticket", "token", "user", "webhook", "window", "worker"}
	verbs    = []string{"apply", "build", "cancel", "check", "close", "decode", "drain", "encode", "fetch", "flush", "load", "merge", "open", "parse", "publish", "render", "resolve", "retry", "save", "scan", "schedule", "sync", "trim", "validate"}
	fillers  = []string{"the", "a", "each", "every", "from", "into", "with", "when", "before", "after", "its", "and", "or", "unless", "only", "once", "per", "of"}
	goTypes  = []string{"string", "int", "int64", "bool", "[]string", "map[string]int", "time.Duration", "*sync.Mutex", "io.Writer", "chan struct{}", "[]byte", "error"}

	sentenceForms = []string{
		"Let me look at how %n is handled in `%f`.",
		"I'll %v the %n first, then check the %n path.",
		"The %n is loaded twice here — once per request and once in the worker.",
		"That explains the failure: `%f` never calls %v on the %n.",
		"Now I'll run the tests to confirm the %n change holds.",
		"The tests pass; the %n no longer needs a separate %v step.",
		"I found where the %n gets its default: `%f`.",
		"This %n check is redundant once %v happens earlier.",
		"Let me search for other callers before changing the %n signature.",
		"The %n limit is read from the config, so I'll %v it there too.",
		"I'll keep the old %n field for now so existing callers still build.",
		"Edge case: an empty %n makes %v return early without an error.",
	}
	promptForms = []string{
		"The %n tests in `%f` are failing after the last merge, can you find out why and fix them?",
		"Please %v the %n before it reaches the %n handler.",
		"Why does %v take so long when the %n is large? Look into it.",
		"Add a %n option to `%f` and wire it through to the %n.",
		"Refactor the %n code so it no longer needs the global %n.",
		"Review `%f` and tell me what could break if we %v the %n concurrently.",
		"ok, now run the whole test suite and fix whatever fails",
		"Write a test for the %n %v path, including the error cases.",
		"can you rename %n to %n everywhere and update the docs",
		"The linter complains about `%f`. Fix it without changing behaviour.",
	}
	// The Chinese vocabulary (Options.Chinese): prose a user who writes
	// to the model in Chinese reads and writes.
	zhNouns   = []string{"账户", "批次", "缓存", "客户端", "配置", "游标", "截止时间", "条目", "事件", "处理器", "索引", "发票", "租约", "限额", "订单", "负载", "支付", "队列", "记录", "报表", "请求", "重试", "路由", "模式", "会话", "分片", "快照", "租户", "工单", "令牌", "用户", "回调", "窗口", "工作进程"}
	zhVerbs   = []string{"应用", "构建", "取消", "检查", "关闭", "解码", "排空", "编码", "获取", "刷新", "加载", "合并", "打开", "解析", "发布", "渲染", "解决", "重试", "保存", "扫描", "调度", "同步", "裁剪", "校验"}
	zhFillers = []string{"的", "一个", "每个", "所有", "从", "到", "和", "当", "之前", "之后", "它的", "以及", "或者", "除非", "只有", "一旦", "每次", "关于"}

	zhSentenceForms = []string{
		"我先看一下 `%f` 里是怎么处理%n的。",
		"我先%v这个%n，然后再检查%n的路径。",
		"这里的%n被加载了两次——每个请求一次，工作进程里又一次。",
		"这就解释了失败的原因：`%f` 从来没有对%n调用%v。",
		"现在运行测试，确认%n的改动没有问题。",
		"测试通过了；%n不再需要单独的%v步骤。",
		"我找到了%n的默认值是在哪里设置的：`%f`。",
		"一旦%v提前发生，这个%n检查就是多余的。",
		"在修改%n的签名之前，我先搜一下其他调用方。",
		"%n的上限是从配置里读的，所以我也在那里%v它。",
	}
	zhPromptForms = []string{
		"上次合并之后 `%f` 里的%n测试失败了，你能查一下原因并修好吗？",
		"请在%n到达%n处理器之前先%v它。",
		"为什么%n很大的时候%v这么慢？帮我看看。",
		"给 `%f` 加一个%n选项，并把它一路传到%n。",
		"好的，现在把整个测试套件跑一遍，有失败的就修掉",
		"帮我检查一下 `%f`，如果并发地%v这个%n会出什么问题？",
	}
	summaryHeads = []string{"Primary request and intent", "Key technical concepts", "Files and code sections", "Errors and fixes", "Problem solving", "All user messages", "Pending tasks", "Current work", "Optional next step"}

	slugWords = []string{"quiet", "amber", "rolling", "brisk", "hollow", "golden", "patient", "crimson", "lucid", "gentle"}
	slugNames = []string{"hopper", "lovelace", "dijkstra", "knuth", "liskov", "hamming", "turing", "backus"}

	agents = []struct{ name, desc string }{
		{"general-purpose", "Handles open-ended multi-step work: research, code search and changes that span many files. (Tools: *)"},
		{"Explore", "Searches a codebase quickly and reports what it found, without editing anything. (Tools: All tools except Edit, Write, NotebookEdit)"},
		{"Plan", "Designs an implementation plan and names the files it would touch. (Tools: All tools except Edit, Write, NotebookEdit)"},
	}
	skills = []struct{ name, desc string }{
		{"code-review", "Review the pending changes on the current branch and point out bugs and risky spots."},
		{"simplify", "Look for code that can be made shorter or clearer without changing what it does."},
		{"init", "Write a CLAUDE.md describing the project for future sessions."},
		{"security-review", "Check the pending changes for security problems."},
	}
)
