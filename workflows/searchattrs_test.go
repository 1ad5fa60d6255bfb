package workflows

import (
	"os"
	"regexp"
	"sort"
	"testing"
)

// TestDevServerScriptRegistersSearchAttributes keeps the dev server script's
// list equal to the definitions the workflows use.
func TestDevServerScriptRegistersSearchAttributes(t *testing.T) {
	script, err := os.ReadFile("../scripts/temporal-dev.sh")
	if err != nil {
		t.Fatal(err)
	}
	var inScript []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(Flinkmaint\w+=\w+)\s*$`).FindAllStringSubmatch(string(script), -1) {
		inScript = append(inScript, m[1])
	}
	var defined []string
	for key := range SearchAttributeDefinitions().GetUntypedValues() {
		defined = append(defined, key.GetName()+"="+key.GetValueType().String())
	}
	sort.Strings(inScript)
	sort.Strings(defined)
	if len(inScript) != len(defined) {
		t.Fatalf("script registers %v, workflows define %v", inScript, defined)
	}
	for i := range defined {
		if inScript[i] != defined[i] {
			t.Fatalf("script registers %v, workflows define %v", inScript, defined)
		}
	}
}
