package shell

import "github.com/subkit/subkit/internal/termtext"

// Render turns terminal output (a transcript read with ReadTranscript) into the text a person
// would read on the screen, line by line: the kit's one rendering, which Step.Output, the
// bash executor's text and the code tools' text share. "\r\n" is a newline; a lone "\r"
// returns to the start of the line, so what follows overwrites it (a progress bar of 10,000
// updates reads as its last state); "\b" steps back one character; escape sequences
// (colours, cursor movement, window titles, hyperlinks) are dropped, except that erase in
// line erases and moves along the line move; every other control byte shows as its Unicode
// control picture ("␀" for NUL), and each invalid UTF-8 byte becomes U+FFFD. The result is
// valid UTF-8, and Render of it returns it unchanged.
func Render(p []byte) string { return termtext.Render(p) }
