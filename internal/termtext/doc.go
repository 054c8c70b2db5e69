// Package termtext is the kit's one rendering of terminal and pipe bytes as text for a model:
// what a person would read on a terminal, line by line, with nothing a model cannot see.
// The bash executor's text, the shell's line mode and the code tools' text all render
// through Render, so the same bytes read the same way whichever tool ran the program.
//
// What it does with each kind of byte:
//
//   - "\n" ends a line; "\r\n" is a newline. A lone "\r" returns to the start of the line,
//     so what follows overwrites it, as on a terminal: a progress bar of 10,000 redraws
//     reads as its last state ("50%\r100%\n" is "100%"; "downloading\rdone\n" is
//     "doneloading"). "\b" steps back one character. "\t" is kept.
//   - Escape sequences are interpreted or dropped, never shown: CSI sequences (colours,
//     cursor movement, modes: ESC [ ... final byte) are dropped, except those that move
//     along the line (ESC [ n C forward, ESC [ n D back, ESC [ n G to a column, kept within
//     the line or its first 1000 columns) and erase in line (ESC [ K, ESC [ 1 K,
//     ESC [ 2 K), which act as on a terminal; OSC, DCS, APC, PM
//     and SOS strings (window titles, hyperlinks' targets, the shell's markers) are dropped
//     up to their BEL or ST terminator, or up to the end of the line when they have none;
//     the short sequences (ESC = and ESC >, ESC 7 and ESC 8, ESC ( B and the like) are
//     dropped. A sequence cut off by the end of the input is dropped.
//   - Every other control byte is shown as its Unicode control picture: NUL as "␀"
//     (U+2400), BEL as "␇", DEL as "␡" (U+2421), an ESC that starts no sequence as "␛".
//     A text never carries a raw NUL or other C0 control besides "\n" and "\t".
//   - Each byte that is not part of valid UTF-8 becomes U+FFFD, one per byte (the same as
//     the terminal's UTF-8 bridge, so pipes and terminals agree), and so does a C1 control
//     (U+0080 to U+009F).
//
// The output is valid UTF-8 and Render of its own output returns it unchanged. Structured
// fields that carry a stream's bytes (a tail, a delta's data) are not rendered: they keep
// the stream's bytes, so offsets and byte counts keep their meaning.
package termtext
