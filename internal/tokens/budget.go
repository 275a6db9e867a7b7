package tokens

import (
	"regexp"
	"strconv"
	"strings"
)

// Token budgets in a prompt (SPEC K4): "+500k" at the start or the end of
// the prompt, or "spend 2M tokens" / "use 1B tokens" anywhere in it. The
// suffix is k (thousand), m (million) or b (billion), in either case.
var (
	budgetStart   = regexp.MustCompile(`(?i)^\s*\+(\d+(?:\.\d+)?)\s*([kmb])\b`)
	budgetEnd     = regexp.MustCompile(`(?i)(?:^|\s)\+(\d+(?:\.\d+)?)\s*([kmb])\s*[.!?]?\s*$`)
	budgetVerbose = regexp.MustCompile(`(?i)\b(?:use|spend)\s+(\d+(?:\.\d+)?)\s*([kmb])\s*tokens?\b`)
)

// MaxBudget caps a parsed budget, so a typo cannot ask for forever.
const MaxBudget = 10_000_000_000

// ParseBudget finds a token budget in a prompt and returns it in tokens.
func ParseBudget(prompt string) (int64, bool) {
	for _, re := range []*regexp.Regexp{budgetStart, budgetEnd, budgetVerbose} {
		if m := re.FindStringSubmatch(prompt); m != nil {
			return budgetValue(m[1], m[2])
		}
	}
	return 0, false
}

func budgetValue(num, suffix string) (int64, bool) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 {
		return 0, false
	}
	switch strings.ToLower(suffix) {
	case "k":
		f *= 1e3
	case "m":
		f *= 1e6
	case "b":
		f *= 1e9
	}
	if f < 1 {
		return 0, false
	}
	return int64(min(f, MaxBudget)), true
}
