// Package errtext is the one shape of the kit's error values: the message
// "pkg: op name: kind: cause (hint)" and the unwrapping to kind and cause that errors.Is and
// errors.As follow.
package errtext

import "strings"

// Format is the message of an error of package pkg that says what was being done (op), to
// what (name, when there is one), of which kind, why (err) and what to do (hint); the parts
// that are empty or nil are left out, and a cause whose text is the kind's is said once.
func Format(pkg, op, name string, kind, err error, hint string) string {
	var b strings.Builder
	b.WriteString(pkg)
	b.WriteString(": ")
	b.WriteString(op)
	if name != "" {
		b.WriteString(" ")
		b.WriteString(name)
	}
	if kind != nil {
		b.WriteString(": ")
		b.WriteString(kind.Error())
	}
	if err != nil && (kind == nil || err.Error() != kind.Error()) {
		b.WriteString(": ")
		b.WriteString(err.Error())
	}
	if hint != "" {
		b.WriteString(" (")
		b.WriteString(hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap lists kind and err, leaving out the nil ones.
func Unwrap(kind, err error) []error {
	var errs []error
	if kind != nil {
		errs = append(errs, kind)
	}
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}
