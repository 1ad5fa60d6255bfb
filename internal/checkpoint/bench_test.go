package checkpoint

import (
	"path/filepath"
	"testing"
)

func BenchmarkParseFixtures(b *testing.B) {
	fixtures := loadFixtures(b)
	type input struct {
		data []byte
		loc  string
	}
	var inputs []input
	var total int64
	for _, fx := range fixtures {
		inputs = append(inputs, input{fx.metadata, filepath.ToSlash(filepath.Join(fx.dir, "_metadata"))})
		total += int64(len(fx.metadata))
	}
	b.SetBytes(total)
	b.ReportAllocs()
	files := 0
	for b.Loop() {
		for _, in := range inputs {
			md, err := ParseBytes(in.data, in.loc)
			if err != nil {
				b.Fatal(err)
			}
			files += len(md.Files)
		}
	}
	b.ReportMetric(float64(files)/b.Elapsed().Seconds(), "files/s")
}

func BenchmarkParseSynthetic5000x20(b *testing.B) {
	data := syntheticMetadata(6, 5000, 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	files := 0
	for b.Loop() {
		md, err := ParseBytes(data, syntheticLocation)
		if err != nil {
			b.Fatal(err)
		}
		files += len(md.Files)
	}
	b.ReportMetric(float64(files)/b.Elapsed().Seconds(), "files/s")
}
