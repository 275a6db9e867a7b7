package tool_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/tool"
)

// TestRegistryReplace: Replace keeps a tool's place and its lookup gives
// the new one; a name not registered changes nothing.
func TestRegistryReplace(t *testing.T) {
	r, err := tool.NewRegistry(plain{"A"}, plain{"B"}, plain{"C"})
	if err != nil {
		t.Fatal(err)
	}
	b2 := saver{plain{"B"}}
	if err := r.Replace(b2); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Lookup("B"); got != tool.Tool(b2) {
		t.Errorf("Lookup(B) = %#v, want the replacement", got)
	}
	if err := r.Replace(plain{"A"}, plain{"D"}); err == nil {
		t.Error("replacing D, not registered, is no error")
	}
	var names []string
	for _, tl := range r.Tools() {
		names = append(names, tl.Spec().Name)
	}
	if diff := cmp.Diff([]string{"A", "B", "C"}, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if _, isSaver := r.Tools()[1].(saver); !isSaver {
		t.Error("the replacement is not in B's place")
	}
}
