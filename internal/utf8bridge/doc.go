// Package utf8bridge turns a byte stream that arrives in arbitrary chunks into UTF-8 text:
// a code point split across chunks is held until it is complete, and bytes that can never be
// part of a valid encoding become U+FFFD.
package utf8bridge
