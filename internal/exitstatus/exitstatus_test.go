package exitstatus

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	text := Text()
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if len(line) > 100 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
	for _, r := range Table {
		if !strings.Contains(text, "\n  "+r.Status+" ") {
			t.Errorf("status %s is not in the text:\n%s", r.Status, text)
		}
	}
	if strings.Contains(text, "`") {
		t.Errorf("Markdown marks in the text:\n%s", text)
	}
}

func TestMarkdown(t *testing.T) {
	md := Markdown()
	for _, r := range Table {
		if !strings.Contains(md, "\n| "+r.Status+" | "+r.Meaning+" |\n") {
			t.Errorf("row %s is not in the table:\n%s", r.Status, md)
		}
	}
}
