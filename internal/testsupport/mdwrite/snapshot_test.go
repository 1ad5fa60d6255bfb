package mdwrite_test

import (
	"maps"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

// TestTheReaderFindsWhatASnapshotNames: a written snapshot names exactly
// its files, the relative ones in the dir of its _metadata, with the sizes
// given, and says whether it is a savepoint.
func TestTheReaderFindsWhatASnapshotNames(t *testing.T) {
	const dir = "hdfs://nn:8020/t/checkpoints/0123456789abcdef0123456789abcdef/chk-7"
	shared := "hdfs://nn:8020/t/checkpoints/fedcba9876543210fedcba9876543210/shared/s1"
	cases := map[string]struct {
		data      []byte
		want      map[string]int64
		savepoint bool
	}{
		"savepoint": {data: mdwrite.Savepoint("a", "b"), want: map[string]int64{dir + "/a": 0, dir + "/b": 0}, savepoint: true},
		"incremental checkpoint": {data: mdwrite.Checkpoint(7, shared, dir+"/x"),
			want: map[string]int64{shared: 0, dir + "/x": 0}},
		"sizes and both kinds of file": {data: mdwrite.Snapshot{CheckpointID: 7, Exclusive: []mdwrite.File{{Path: "m", Size: 3}},
			Shared: []mdwrite.File{{Path: shared, Size: 5}}}.Bytes(), want: map[string]int64{dir + "/m": 3, shared: 5}},
		"savepoint of no file": {data: mdwrite.Savepoint(), want: map[string]int64{}, savepoint: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			md, err := checkpoint.ParseBytes(tc.data, dir+"/_metadata")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, f := range md.Files {
				got[f.Path] = f.Size
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("files %v; want %v", got, tc.want)
			}
			if md.Properties == nil || (md.Properties.SnapshotType == "savepoint") != tc.savepoint {
				t.Errorf("properties %+v; want savepoint %v", md.Properties, tc.savepoint)
			}
		})
	}
}
