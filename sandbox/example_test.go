package sandbox_test

import (
	"fmt"
	"slices"

	"github.com/subkit/subkit/sandbox"
)

// A confined program failed: LikelyDenial says which refusal is likely behind it, in one line
// to add to the result shown to a user or a model.
func ExampleLikelyDenial() {
	stderr := []byte("touch: cannot touch '/etc/motd': Permission denied\n")
	fmt.Println(sandbox.LikelyDenial(stderr, 1))
	fmt.Println(sandbox.LikelyDenial(nil, 128+25)) // killed by SIGXFSZ
	fmt.Printf("%q\n", sandbox.LikelyDenial([]byte("no such file\n"), 1))
	// Output:
	// sandbox: an access was likely refused by the sandbox (Permission denied: a write outside the writable roots, or a hidden path); --writable DIR allows writes there, and the Report lists the hidden paths
	// sandbox: the program likely hit the file-size limit (SIGXFSZ); raise Limits.FileSizeBytes
	// ""
}

// The credential stores, browser profiles and histories of DefaultHidden are hidden from
// every program unless the Policy sets NoDefaultHidden; Policy.Hidden adds to them.
func ExampleDefaultHidden() {
	hidden := sandbox.DefaultHidden()
	fmt.Println(hidden[:3])
	fmt.Println(slices.Contains(hidden, "~/.npmrc"), slices.Contains(hidden, "~/.bash_history"))
	// Output:
	// [~/.ssh ~/.gnupg ~/.config/sops/age/keys.txt]
	// true true
}
