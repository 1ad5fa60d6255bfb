package temporalconn

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

type jobEntry struct {
	Key           string `json:"key"`
	SavepointPath string `json:"savepointPath"`
}

func window(n int) []jobEntry {
	jobs := make([]jobEntry, n)
	for i := range jobs {
		jobs[i] = jobEntry{Key: "cluster-a/job-" + strings.Repeat("x", i%7), SavepointPath: "hdfs://nn:8020/user/app/team-a/savepoints/savepoint-0a1b2c-3d4e5f6a7b8c"}
	}
	return jobs
}

func TestDataConverterCompressesOnlyLargePayloads(t *testing.T) {
	dc := DataConverter()
	small, err := dc.ToPayload(window(3))
	if err != nil {
		t.Fatal(err)
	}
	if enc := string(small.Metadata[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		t.Errorf("small payload encoding %q; want plain %s, readable without the codec", enc, converter.MetadataEncodingJSON)
	}
	big := window(5000)
	plain, err := converter.GetDefaultDataConverter().ToPayload(big)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dc.ToPayload(big)
	if err != nil {
		t.Fatal(err)
	}
	if enc := string(p.Metadata[converter.MetadataEncoding]); enc != "binary/zlib" {
		t.Fatalf("large payload encoding %q; want binary/zlib", enc)
	}
	t.Logf("5000 entries: %d bytes as JSON, %d compressed", len(plain.Data), len(p.Data))
	if len(p.Data) >= CompressAbove {
		t.Errorf("compressed payload still %d bytes", len(p.Data))
	}
	var back []jobEntry
	if err := dc.FromPayload(p, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(big) || back[4999] != big[4999] {
		t.Errorf("round trip lost data: %d entries", len(back))
	}
	// Payloads written without the codec still decode.
	var old []jobEntry
	if err := dc.FromPayload(plain, &old); err != nil || len(old) != len(big) {
		t.Errorf("plain payload: %d entries, %v", len(old), err)
	}
}

func TestCodecHandlerServesTheWebUI(t *testing.T) {
	srv := httptest.NewServer(CodecHandler())
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
	req.Header.Set("Origin", "http://localhost:8233")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") == "" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}

	p, err := DataConverter().ToPayload(window(5000))
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Post(srv.URL+"/codec/decode", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Payloads []struct {
			Metadata map[string][]byte `json:"metadata"`
			Data     []byte            `json:"data"`
		} `json:"payloads"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(out.Payloads) != 1 || string(out.Payloads[0].Metadata["encoding"]) != "json/plain" ||
		!bytes.HasPrefix(out.Payloads[0].Data, []byte(`[{"key":"cluster-a/job-"`)) {
		t.Errorf("decode: status %d, %d payloads", resp.StatusCode, len(out.Payloads))
	}

	resp, err = http.Get(srv.URL + "/codec/decode")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d; want 405", resp.StatusCode)
	}
}
