package sandbox_test

import (
	"fmt"

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
	// sandbox: an access was likely refused by the sandbox (Permission denied: a write outside the writable roots, or a hidden path)
	// sandbox: the program likely hit the file-size limit (SIGXFSZ)
	// ""
}

func ExampleDefaultHidden() {
	fmt.Println(sandbox.DefaultHidden())
	// Output:
	// [~/.ssh ~/.aws ~/.gnupg ~/.config/gcloud ~/.docker/config.json ~/.netrc ~/.kube]
}
