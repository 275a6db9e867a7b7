package agent

import (
	"testing"
	"unsafe"
)

// TestUUIDSet: a uuid in canonical form is found by its bytes, any other
// string as itself; forms uuid.Parse also reads (upper case, braces, a
// urn) are other strings, not the same uuid; and the set holds none of
// the strings it was given.
func TestUUIDSet(t *testing.T) {
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	s := newUUIDSet(2)
	s.add(id)
	b := []byte("a-line-of-another-program")
	s.add(unsafe.String(&b[0], len(b))) // a string sliced from a buffer
	b[0] = 'X'                          // the buffer reused
	for _, c := range []struct {
		id   string
		want bool
	}{
		{id, true},
		{"0F8FAD5B-D9CB-469F-A165-70867728950E", false},
		{"{" + id + "}", false},
		{"urn:uuid:" + id, false},
		{"0f8fad5bd9cb469fa16570867728950e", false},
		{"1f8fad5b-d9cb-469f-a165-70867728950e", false},
		{"a-line-of-another-program", true},
		{"X-line-of-another-program", false},
		{"", false},
	} {
		if got := s.has(c.id); got != c.want {
			t.Errorf("has(%q) = %v, want %v", c.id, got, c.want)
		}
	}
	if len(s.ids) != 1 || len(s.others) != 1 {
		t.Errorf("%d uuids kept by their bytes, %d strings: want 1 and 1", len(s.ids), len(s.others))
	}
}
