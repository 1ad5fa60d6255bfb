package flink

// endpoint is one REST operation the client uses. The contract test checks
// each against the OpenAPI specs of every supported Flink version.
type endpoint struct {
	method string
	// path as written in the spec, e.g. /jobs/{jobid}.
	path string
	// query parameters the client may send.
	query []string
	// request and response bodies (zero values of the Go types), nil when
	// the body is not JSON or not decoded.
	request, response any
}

// Supported Flink versions (major.minor) as named in the spec files.
var supportedVersions = []string{"1.20", "2.0", "2.2", "2.4"}

var (
	epClusterOverview     = endpoint{method: "GET", path: "/overview", response: ClusterOverview{}}
	epDashboardConfig     = endpoint{method: "GET", path: "/config", response: DashboardConfig{}}
	epJobManagerConfig    = endpoint{method: "GET", path: "/jobmanager/config", response: Config(nil)}
	epJobsOverview        = endpoint{method: "GET", path: "/jobs/overview", response: jobsOverviewResponse{}}
	epJobDetails          = endpoint{method: "GET", path: "/jobs/{jobid}", response: JobDetails{}}
	epJobStatus           = endpoint{method: "GET", path: "/jobs/{jobid}/status", response: jobStatusResponse{}}
	epJobExceptions       = endpoint{method: "GET", path: "/jobs/{jobid}/exceptions", query: []string{"maxExceptions"}, response: JobExceptions{}}
	epJobJobManagerConfig = endpoint{method: "GET", path: "/jobs/{jobid}/jobmanager/config", response: Config(nil)}
	epCheckpoints         = endpoint{method: "GET", path: "/jobs/{jobid}/checkpoints", response: CheckpointingStatistics{}}
	epCheckpointConfig    = endpoint{method: "GET", path: "/jobs/{jobid}/checkpoints/config", response: CheckpointConfig{}}
	epCheckpointDetails   = endpoint{method: "GET", path: "/jobs/{jobid}/checkpoints/details/{checkpointid}", response: CheckpointStatistics{}}
	epTriggerSavepoint    = endpoint{method: "POST", path: "/jobs/{jobid}/savepoints", request: savepointTriggerBody{}, response: triggerResponse{}}
	epSavepointStatus     = endpoint{method: "GET", path: "/jobs/{jobid}/savepoints/{triggerid}", response: asyncOperationResult{}}
	epStopWithSavepoint   = endpoint{method: "POST", path: "/jobs/{jobid}/stop", request: stopWithSavepointBody{}, response: triggerResponse{}}
	epCancelJob           = endpoint{method: "PATCH", path: "/jobs/{jobid}", query: []string{"mode"}}
	epDisposeSavepoint    = endpoint{method: "POST", path: "/savepoint-disposal", request: savepointDisposalBody{}, response: triggerResponse{}}
	epDisposalStatus      = endpoint{method: "GET", path: "/savepoint-disposal/{triggerid}", response: asyncOperationResult{}}
	epJarUpload           = endpoint{method: "POST", path: "/jars/upload", response: jarUploadResponse{}}
	epJarList             = endpoint{method: "GET", path: "/jars", response: JarList{}}
	epJarRun              = endpoint{method: "POST", path: "/jars/{jarid}/run", request: jarRunBody{}, response: jarRunResponse{}}
	epJarDelete           = endpoint{method: "DELETE", path: "/jars/{jarid}"}
	// The metric endpoints answer a bare JSON array, not the object their
	// specs describe; the real-cluster tests check the wire format.
	epJobMetrics    = endpoint{method: "GET", path: "/jobs/{jobid}/metrics", query: []string{"get"}}
	epVertexMetrics = endpoint{method: "GET", path: "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics", query: []string{"get", "agg"}}
	// Checkpoint triggers (Flink 1.19+).
	epTriggerCheckpoint       = endpoint{method: "POST", path: "/jobs/{jobid}/checkpoints", request: checkpointTriggerBody{}, response: triggerResponse{}}
	epCheckpointTriggerStatus = endpoint{method: "GET", path: "/jobs/{jobid}/checkpoints/{triggerid}", response: checkpointOperationResult{}}
)

// allEndpoints is every endpoint the client uses.
var allEndpoints = []endpoint{
	epClusterOverview, epDashboardConfig, epJobManagerConfig, epJobsOverview, epJobDetails,
	epJobStatus, epJobExceptions, epJobJobManagerConfig, epCheckpoints, epCheckpointConfig,
	epCheckpointDetails, epTriggerSavepoint, epSavepointStatus, epStopWithSavepoint, epCancelJob,
	epDisposeSavepoint, epDisposalStatus, epJarUpload, epJarList, epJarRun, epJarDelete,
	epJobMetrics, epVertexMetrics, epTriggerCheckpoint, epCheckpointTriggerStatus,
}
