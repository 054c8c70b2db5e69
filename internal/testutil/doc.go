// Package testutil holds the leak checks every test package of subkit uses: no child process,
// descriptor or temp dir may outlive a test.
package testutil
