package thread

import (
	"fmt"
	"slices"
	"testing"
)

// TestTrust322_KeptListRoundTrips: the summary record's list of kept
// segments gives back every segment this package names, in order, and
// the whole name of one it does not; what names no segment is left out.
func TestTrust322_KeptListRoundTrips(t *testing.T) {
	segs := []segRef{
		{Name: recordName(segPrefix, "0000000000"), First: 0},
		{Name: recordName(segPrefix, "0000001234"), First: 1234},
		{Name: "seg.12345678901.abc", First: 12345678901},
		{Name: "seg.7.odd.name", First: 7},
	}
	got := keptRefs(keptList(append(slices.Clone(segs), segRef{Name: "seg.8.has space", First: 8})))
	if !slices.Equal(got, segs) {
		t.Errorf("round trip:\n got %v\nwant %v", got, segs)
	}
	for _, n := range []int{0, 7, 1234, 9999999999, 12345678901} {
		if got, want := segName(n, "ab"), fmt.Sprintf("seg.%010d.ab", n); got != want {
			t.Errorf("segName(%d) = %q, want %q", n, got, want)
		}
	}
	if got := keptRefs("x.y -1.abc 12. seg.nope"); len(got) != 0 {
		t.Errorf("malformed entries gave %v", got)
	}
}
