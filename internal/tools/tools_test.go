package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/tool"
)

func TestCore(t *testing.T) {
	var names []string
	for _, tl := range Core() {
		names = append(names, tl.Spec().Name)
	}
	if diff := cmp.Diff([]string{"Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "MultiEdit", "Write", "WebFetch", "TodoWrite", "EnterPlanMode"}, names); diff != "" {
		t.Errorf("Core order (-want +got):\n%s", diff)
	}
	if _, err := tool.NewRegistry(Core()...); err != nil {
		t.Fatal(err)
	}
}

// TestSpecsMatchInputs checks each tool's schema against what it accepts:
// the properties are exactly the parameters Run knows, and the required
// ones are reported missing.
func TestSpecsMatchInputs(t *testing.T) {
	env := newEnv(t)
	for _, tl := range Core() {
		spec := tl.Spec()
		t.Run(spec.Name, func(t *testing.T) {
			if len(spec.Description) < 200 {
				t.Errorf("description is only %d characters", len(spec.Description))
			}
			var s struct {
				Type                 string
				Properties           map[string]json.RawMessage
				Required             []string
				AdditionalProperties *bool
			}
			if err := json.Unmarshal(spec.InputSchema, &s); err != nil {
				t.Fatal(err)
			}
			if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Errorf("schema must be a closed object: %s", spec.InputSchema)
			}
			r := call(t, tl, env, map[string]any{"zz_unknown": 1})
			_, known, ok := strings.Cut(text(t, r), spec.Name+" takes ")
			if !ok {
				t.Fatalf("unknown parameter not refused: %q", text(t, r))
			}
			known = strings.TrimSuffix(known, "</tool_use_error>")
			var got []string
			if known != "no parameters" {
				got = strings.Split(known, ", ")
			}
			want := make([]string, 0, len(s.Properties))
			for k := range s.Properties {
				want = append(want, k)
			}
			if diff := cmp.Diff(slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(got))); diff != "" {
				t.Errorf("schema properties (-schema +accepted):\n%s", diff)
			}
			for _, req := range s.Required {
				r := call(t, tl, env, map[string]any{})
				if !strings.Contains(text(t, r), "required parameter") {
					t.Errorf("missing %q not reported: %q", req, text(t, r))
				}
			}
		})
	}
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{"file_path":"/a","offset":"3","limit":2.0}`, `{"offset":1e300}`, `[]`, `null`, `{"limit":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a := parseArgs("Read", data, "file_path", "offset", "limit")
		a.str("file_path", true)
		a.int("offset")
		a.int("limit")
		a.bool("offset")
		if a.err != nil {
			_ = a.invalid()
		}
	})
}
