package transcript

import (
	"fmt"
	"testing"
)

// TestVersionNumbersAgreesWithSscanf: the fast parse of versionAtLeast
// reads what fmt.Sscanf("%d.%d.%d") reads wherever it answers.
func TestVersionNumbersAgreesWithSscanf(t *testing.T) {
	for _, v := range []string{
		"2.1.332", "2.1.197", "2.1.331", "2.2.0", "3.0.0", "10.20.30", "0.0.0", "02.01.0332",
		"", "2", "2.1", "2.1.", ".1.2", "2..1", "2.1.3.4", "2.1.3-beta", "+2.1.3", "-2.1.3", " 2.1.3",
		"2.1.3 ", "cairn-0.1.0", "999999999.1.1", "9999999999.1.1", "2.1.x", "2.1.332\n",
	} {
		x, ok := versionNumbers(v)
		var a, b, c int
		n, err := fmt.Sscanf(v, "%d.%d.%d", &a, &b, &c)
		if ok && (err != nil || n != 3 || x != [3]int{a, b, c}) {
			t.Errorf("versionNumbers(%q) = %v; Sscanf reads %d, %d, %d (n=%d, err=%v)", v, x, a, b, c, n, err)
		}
	}
	for _, tc := range []struct {
		v    string
		want bool
	}{{"2.1.332", true}, {"2.1.331", false}, {"2.2.0", true}, {"1.9.999", false}, {"2.1.332-beta", true}, {"cairn-0.1.0", false}, {"", false}} {
		if got := versionAtLeast(tc.v, 2, 1, 332); got != tc.want {
			t.Errorf("versionAtLeast(%q, 2.1.332) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
