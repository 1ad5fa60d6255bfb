{{/*
Every object's name starts with the release's, so two releases (flinkmaint
and flinkmaint-staging) live side by side in one cluster, cluster-scoped
roles included: the release name when it holds "flinkmaint", else
<release>-flinkmaint; fullnameOverride replaces it. At most 40 characters,
so the longest name (<fullname>-worker-namespaces) stays a valid label
where Kubernetes wants one (the Service <fullname>-worker-metrics).
*/}}
{{- define "flinkmaint.fullname" -}}
{{- $name := .Values.fullnameOverride -}}
{{- if not $name -}}
{{- $name = ternary .Release.Name (printf "%s-%s" .Release.Name .Chart.Name) (contains .Chart.Name .Release.Name) -}}
{{- end -}}
{{- if gt (len $name) 40 -}}
{{- fail (printf "the object names' prefix %q (release name, or fullnameOverride) has %d characters: at most 40 fit every name the chart makes; set fullnameOverride to a shorter one" $name (len $name)) -}}
{{- end -}}
{{- $name -}}
{{- end }}

{{/* The worker's objects: <fullname>-worker. */}}
{{- define "flinkmaint.worker" -}}
{{- include "flinkmaint.fullname" . }}-worker
{{- end }}

{{/*
The ServiceAccount the worker runs as: the chart's, <fullname>-worker by
default, or one made elsewhere (serviceAccount.create false), named.
*/}}
{{- define "flinkmaint.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "flinkmaint.worker" .) -}}
{{- else if .Values.serviceAccount.name -}}
{{- .Values.serviceAccount.name -}}
{{- else -}}
{{- fail "serviceAccount.create is false and serviceAccount.name is empty: name the ServiceAccount the worker runs as, or let the chart create it" -}}
{{- end -}}
{{- end }}

{{/* Labels of every object; selectorLabels pick the worker's pods. */}}
{{- define "flinkmaint.selectorLabels" -}}
app.kubernetes.io/name: flinkmaint-worker
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "flinkmaint.labels" -}}
{{ include "flinkmaint.selectorLabels" . }}
app.kubernetes.io/part-of: flinkmaint
app.kubernetes.io/version: {{ include "flinkmaint.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "flinkmaint.tag" -}}
{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The worker's image: by digest when one is given (it wins over the tag). */}}
{{- define "flinkmaint.image" -}}
{{- if .Values.image.digest -}}
{{ printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository (include "flinkmaint.tag" .) }}
{{- end -}}
{{- end }}

{{/*
The worker's configuration: .Values.config with the listener the probes
use and the paths of the files the chart mounts.
*/}}
{{- define "flinkmaint.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $http := get $cfg "http" | default dict -}}
{{- $_ := set $http "listen" ":9090" -}}
{{- $_ := set $cfg "http" $http -}}
{{- $temporal := get $cfg "temporal" | default dict -}}
{{- with .Values.temporal.tls -}}
{{- if .secret -}}
{{- $tls := get $temporal "tls" | default dict -}}
{{- $_ := set $tls "enabled" true -}}
{{- if .clientCertificate -}}
{{- $_ := set $tls "certFile" "/etc/flinkmaint/temporal-tls/tls.crt" -}}
{{- $_ := set $tls "keyFile" "/etc/flinkmaint/temporal-tls/tls.key" -}}
{{- end -}}
{{- if .ca -}}
{{- $_ := set $tls "caFile" "/etc/flinkmaint/temporal-tls/ca.crt" -}}
{{- end -}}
{{- $_ := set $temporal "tls" $tls -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "temporal" $temporal -}}
{{- $storage := get $cfg "storage" | default dict -}}
{{- if .Values.hadoop.confConfigMap -}}
{{- $_ := set $storage "hadoopConfDir" "/etc/hadoop/conf" -}}
{{- end -}}
{{- if .Values.kerberos.principal -}}
{{- $krb := get $storage "kerberos" | default dict -}}
{{- $_ := set $krb "principal" .Values.kerberos.principal -}}
{{- $_ := set $krb "keytab" "/etc/flinkmaint/kerberos/keytab" -}}
{{- if .Values.kerberos.krb5ConfigMap -}}
{{- $_ := set $krb "krb5Conf" "/etc/flinkmaint/krb5/krb5.conf" -}}
{{- end -}}
{{- $_ := set $storage "kerberos" $krb -}}
{{- end -}}
{{- $_ := set $cfg "storage" $storage -}}
{{- /* The worker knows what rbac.profile granted it: doctor then checks no
delete verb, and governance keeps what it may not delete. */ -}}
{{- $inv := get $cfg "inventory" | default dict -}}
{{- with get $inv "kubernetes" -}}
{{- if and $.Values.rbac.create (ne $.Values.rbac.profile "full") -}}
{{- $_ := set . "rbacProfile" $.Values.rbac.profile -}}
{{- end -}}
{{- end -}}
{{ toYaml $cfg }}
{{- end }}

{{/*
The worker container's env, mounts and volumes; the helm test pod that
runs `flinkmaint doctor` gets the same, so the CLI there sees what the
worker sees.
*/}}
{{- define "flinkmaint.env" -}}
{{- $cfg := include "flinkmaint.config" . | fromYaml }}
{{- $t := $cfg.temporal | default dict }}
{{- $tls := $t.tls | default dict -}}
# worker.yaml's Temporal connection and task queue, for the flinkmaint CLI
# in the pod (kubectl exec, helm test): it reads these, so it needs no
# flags. TLS files also under the short names TEMPORAL_TLS_CERT, _KEY and
# _CA, for tools that read those.
{{- range $name, $value := dict "TEMPORAL_ADDRESS" $t.address "TEMPORAL_NAMESPACE" $t.namespace "TEMPORAL_UI_URL" $t.uiURL "FLINKMAINT_TASK_QUEUE" ($cfg.worker | default dict).taskQueue "TEMPORAL_TLS_SERVER_NAME" $tls.serverName "TEMPORAL_TLS_CLIENT_CERT_PATH" $tls.certFile "TEMPORAL_TLS_CERT" $tls.certFile "TEMPORAL_TLS_CLIENT_KEY_PATH" $tls.keyFile "TEMPORAL_TLS_KEY" $tls.keyFile "TEMPORAL_TLS_SERVER_CA_CERT_PATH" $tls.caFile "TEMPORAL_TLS_CA" $tls.caFile }}
{{- with $value }}
- name: {{ $name }}
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if $tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- end }}
{{- with .Values.temporal.apiKeySecret }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.temporal.apiKeySecretKey }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "flinkmaint.volumeMounts" -}}
# A directory, not a subPath: a changed ConfigMap reaches the
# volume (and the pod template's checksum restarts the pods).
- {name: config, mountPath: /etc/flinkmaint/config, readOnly: true}
- {name: tmp, mountPath: /tmp}
{{- if .Values.temporal.tls.secret }}
- {name: temporal-tls, mountPath: /etc/flinkmaint/temporal-tls, readOnly: true}
{{- end }}
{{- if .Values.hadoop.confConfigMap }}
- {name: hadoop-conf, mountPath: /etc/hadoop/conf, readOnly: true}
{{- end }}
{{- if .Values.kerberos.principal }}
- {name: kerberos-keytab, mountPath: /etc/flinkmaint/kerberos, readOnly: true}
{{- if .Values.kerberos.krb5ConfigMap }}
- {name: krb5-conf, mountPath: /etc/flinkmaint/krb5, readOnly: true}
{{- end }}
{{- end }}
{{- range $i, $m := .Values.secretMounts }}
- {name: {{ printf "secret-%d" $i }}, mountPath: {{ $m.mountPath }}, readOnly: true}
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "flinkmaint.volumes" -}}
- name: config
  configMap: {name: {{ include "flinkmaint.worker" . }}}
- name: tmp
  emptyDir: {}
{{- with .Values.temporal.tls.secret }}
- name: temporal-tls
  secret: {secretName: {{ . }}}
{{- end }}
{{- with .Values.hadoop.confConfigMap }}
- name: hadoop-conf
  configMap: {name: {{ . }}}
{{- end }}
{{- if .Values.kerberos.principal }}
- name: kerberos-keytab
  secret:
    secretName: {{ .Values.kerberos.keytabSecret }}
    items: [{key: {{ .Values.kerberos.keytabSecretKey }}, path: keytab}]
{{- with .Values.kerberos.krb5ConfigMap }}
- name: krb5-conf
  configMap: {name: {{ . }}, items: [{key: krb5.conf, path: krb5.conf}]}
{{- end }}
{{- end }}
{{- range $i, $m := .Values.secretMounts }}
- name: {{ printf "secret-%d" $i }}
  secret: {secretName: {{ $m.secret }}}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The tenant namespaces the worker is bound in, as a JSON list: those the
worker's inventory names (config.inventory.kubernetes.namespaces and
tenants[].namespace, the one list both read) and rbac.tenantNamespaces
(the namespaces a namespaceSelector selects; an rbac.only install's).
*/}}
{{- define "flinkmaint.tenantNamespaces" -}}
{{- $inv := include "flinkmaint.inventory" . | fromYaml -}}
{{- $ns := list -}}
{{- range $inv.namespaces }}{{ $ns = append $ns . }}{{ end -}}
{{- range $inv.tenants }}{{ $ns = append $ns .namespace }}{{ end -}}
{{- range .Values.rbac.tenantNamespaces }}{{ $ns = append $ns . }}{{ end -}}
{{- $ns | uniq | toJson -}}
{{- end }}

{{/*
"true" when the worker lists namespaces cluster-wide: its inventory
selects them by label, or rbac.namespaceSelector says another cluster's
does (an rbac.only install).
*/}}
{{- define "flinkmaint.listsNamespaces" -}}
{{- $inv := include "flinkmaint.inventory" . | fromYaml -}}
{{- or (not (empty $inv.namespaceSelector)) .Values.rbac.namespaceSelector | toString -}}
{{- end }}

{{/* The worker configuration's inventory.kubernetes, as YAML ({} when none). */}}
{{- define "flinkmaint.inventory" -}}
{{- $cfg := include "flinkmaint.config" . | fromYaml -}}
{{- ((($cfg.inventory | default dict).kubernetes) | default dict) | toYaml -}}
{{- end }}
