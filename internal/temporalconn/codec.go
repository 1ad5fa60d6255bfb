package temporalconn

import (
	"net/http"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// CompressAbove is the payload size from which payloads are stored
// zlib-compressed. A window over thousands of jobs carries its whole state
// across continue-as-new and returns it in queries and its result; as JSON
// that passes Temporal's 2 MiB payload limit at about two thousand jobs,
// compressed at well over ten thousand. Smaller payloads stay plain JSON,
// readable in the Web UI and by any client without this codec.
const CompressAbove = 128 << 10

// DataConverter is the converter every flinkmaint client and worker uses:
// JSON, with large payloads compressed. Payloads written without
// compression (by older versions, or small ones) decode unchanged.
func DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), LargePayloadCodec())
}

// LargePayloadCodec compresses payloads of CompressAbove bytes or more.
func LargePayloadCodec() converter.PayloadCodec {
	return largePayloadCodec{zlib: converter.NewZlibCodec(converter.ZlibCodecOptions{})}
}

type largePayloadCodec struct{ zlib converter.PayloadCodec }

func (c largePayloadCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if proto.Size(p) < CompressAbove {
			out[i] = p
			continue
		}
		enc, err := c.zlib.Encode([]*commonpb.Payload{p})
		if err != nil {
			return payloads, err
		}
		out[i] = enc[0]
	}
	return out, nil
}

// Decode inflates compressed payloads and passes every other one through.
func (c largePayloadCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return c.zlib.Decode(payloads)
}

// CodecHandler serves the codec as a remote codec endpoint
// (<prefix>/encode, <prefix>/decode) so the Temporal Web UI can show
// compressed payloads: point the UI's codec endpoint at it
// (`temporal server start-dev --ui-codec-endpoint http://localhost:9090/codec`).
// The UI calls it from the browser, hence CORS; it only transforms
// payloads the caller already holds.
func CodecHandler() http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(LargePayloadCodec())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "use POST with a JSON body of payloads", http.StatusMethodNotAllowed)
			return
		}
		codec.ServeHTTP(w, r)
	})
}
