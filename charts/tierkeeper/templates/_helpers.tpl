{{/* Names: <release>-tierkeeper-<component>, cut to 63 characters. */}}
{{- define "tierkeeper.fullname" -}}
{{- if contains "tierkeeper" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-tierkeeper" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tierkeeper.offloader.name" -}}
{{- printf "%s-offloader" (include "tierkeeper.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tierkeeper.bookieagent.name" -}}
{{- printf "%s-bookieagent" (include "tierkeeper.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tierkeeper.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: tierkeeper
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ include "tierkeeper.tag" . | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of a component: (dict "root" $ "component" "offloader"). */}}
{{- define "tierkeeper.selector" -}}
app.kubernetes.io/name: tierkeeper-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "tierkeeper.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion -}}
{{- end -}}

{{/* Image of a component: (dict "root" $ "name" "offloader"). */}}
{{- define "tierkeeper.image" -}}
{{- printf "%s/%s:%s" .root.Values.image.registry .name (include "tierkeeper.tag" .root) -}}
{{- end -}}

{{- define "tierkeeper.offloader.serviceAccountName" -}}
{{- if .Values.offloader.serviceAccount.create -}}
{{- .Values.offloader.serviceAccount.name | default (include "tierkeeper.offloader.name" .) -}}
{{- else -}}
{{- .Values.offloader.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "tierkeeper.bookieagent.serviceAccountName" -}}
{{- $sa := .Values.bookieagent.daemonset.serviceAccount -}}
{{- if $sa.create -}}
{{- $sa.name | default (include "tierkeeper.bookieagent.name" .) -}}
{{- else -}}
{{- $sa.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* Where the Secret's files are mounted in the offloader. */}}
{{- define "tierkeeper.secretDir" -}}/etc/tierkeeper/secrets{{- end -}}

{{/*
Validation of values that cannot work: each message names the value.
Included by every template that depends on them.
*/}}
{{- define "tierkeeper.validate" -}}
{{- $o := .Values.offloader -}}
{{- if $o.enabled -}}
{{- if not (and (regexMatch "^[0-9]+$" (toString $o.replicas)) (ge (int $o.replicas) 1)) -}}
{{- fail (printf "offloader.replicas must be an integer >= 1 (2 or more to survive the loss of a replica), got %v" $o.replicas) -}}
{{- end -}}
{{- if not $o.zookeeper.servers -}}
{{- fail "offloader.zookeeper.servers is required: Pulsar's metadata store, host:port[,host:port][/root] (e.g. pulsar-zookeeper:2181)" -}}
{{- end -}}
{{- if not (has $o.store.type (list "s3" "cos" "fs")) -}}
{{- fail (printf "offloader.store.type is required: s3, cos or fs (got %q), with offloader.store.config as in docs/blobstores.md" ($o.store.type | toString)) -}}
{{- end -}}
{{- if and (ne $o.store.type "fs") (not ($o.store.config).bucket) -}}
{{- fail (printf "offloader.store.config.bucket is required for store type %s" $o.store.type) -}}
{{- end -}}
{{- range $k := list "secret_access_key" "session_token" "secret_key" "secret_id" "access_key_id" -}}
{{- if hasKey ((($o.store.config).credentials) | default dict) $k -}}
{{- fail (printf "offloader.store.config.credentials.%s: secrets do not go into values; put it in the Secret offloader.secret.name and set offloader.store.secretKeys.%s to its key" $k $k) -}}
{{- end -}}
{{- end -}}
{{- if and (or $o.store.secretKeys $o.admin.tokenSecretKey $o.zookeeper.digestSecretKey) (not $o.secret.name) -}}
{{- fail "offloader.secret.name is required: offloader.store.secretKeys, offloader.admin.tokenSecretKey and offloader.zookeeper.digestSecretKey name keys of that Secret" -}}
{{- end -}}
{{- if and $o.admin.tokenSecretKey (not $o.admin.url) -}}
{{- fail "offloader.admin.url is required when offloader.admin.tokenSecretKey is set" -}}
{{- end -}}
{{- range $k := list "zookeeper" "store" "admin" "http" -}}
{{- if hasKey $o.settings $k -}}
{{- fail (printf "offloader.settings.%s: set it with offloader.%s (the chart writes that section)" $k (eq $k "http" | ternary "port" $k)) -}}
{{- end -}}
{{- end -}}
{{- if lt (int $o.terminationGracePeriodSeconds) 31 -}}
{{- fail (printf "offloader.terminationGracePeriodSeconds %v is too short: above scheduler.stop_timeout + 30 s" $o.terminationGracePeriodSeconds) -}}
{{- end -}}
{{- end -}}
{{- $b := .Values.bookieagent -}}
{{- if not (has $b.layout (list "daemonset" "sidecar" "none")) -}}
{{- fail (printf "bookieagent.layout must be daemonset, sidecar or none, got %q" ($b.layout | toString)) -}}
{{- end -}}
{{- if and (eq $b.layout "daemonset") (not (and $b.daemonset.journalDirs $b.daemonset.ledgerDirs)) -}}
{{- fail "bookieagent.daemonset.journalDirs and bookieagent.daemonset.ledgerDirs: give at least one host directory each" -}}
{{- end -}}
{{- $c := $b.conf | default dict -}}
{{- if and $c.hostPath ($c.configMap).name -}}
{{- fail "bookieagent.conf: set hostPath or configMap, not both" -}}
{{- end -}}
{{- if and $c.hostPath (not (hasPrefix "/" $c.hostPath)) -}}
{{- fail (printf "bookieagent.conf.hostPath must be an absolute path on the node, got %q" $c.hostPath) -}}
{{- end -}}
{{- if and $c.hostPath (eq $b.layout "sidecar") -}}
{{- fail "bookieagent.conf.hostPath: a sidecar cannot mount a node's file; give the bookkeeper.conf as bookieagent.conf.configMap" -}}
{{- end -}}
{{- if and ($c.configMap).name (not ($c.configMap).key) -}}
{{- fail "bookieagent.conf.configMap.key is required: the key of the ConfigMap that holds bookkeeper.conf" -}}
{{- end -}}
{{- if and (eq $b.layout "sidecar") (not (and $b.sidecar.journal $b.sidecar.ledgers $b.sidecar.pulsarFullname)) -}}
{{- fail "bookieagent.sidecar.pulsarFullname, bookieagent.sidecar.journal and bookieagent.sidecar.ledgers are required with bookieagent.layout sidecar" -}}
{{- end -}}
{{- end -}}

{{/* Container security: non-root, read-only root, no privileges. */}}
{{- define "tierkeeper.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/*
The bookie's bookkeeper.conf for the agent (bookieagent.conf): the volume
and mount, or nothing. (dict "root" $) -> YAML of {volume, mount, path}.
*/}}
{{- define "tierkeeper.bookieagent.conf" -}}
{{- $c := .root.Values.bookieagent.conf | default dict -}}
{{- if $c.hostPath -}}
volume: {name: tierkeeper-bookie-conf, hostPath: {path: {{ $c.hostPath | quote }}, type: File}}
mount: {name: tierkeeper-bookie-conf, mountPath: /bookie/conf/bookkeeper.conf, readOnly: true}
path: /bookie/conf/bookkeeper.conf
{{- else if ($c.configMap).name -}}
volume: {name: tierkeeper-bookie-conf, configMap: {name: {{ $c.configMap.name | quote }}, items: [{key: {{ $c.configMap.key | quote }}, path: bookkeeper.conf}]}}
mount: {name: tierkeeper-bookie-conf, mountPath: /bookie/conf, readOnly: true}
path: /bookie/conf/bookkeeper.conf
{{- end -}}
{{- end -}}

{{/*
The bookie agent's container, shared by the DaemonSet and the sidecar
patch: (dict "root" $ "journal" (list paths) "ledgers" (list paths)
"mounts" (list volumeMounts) "host" bool "runAs" (dict of runAs* fields)
"conf" path of the bookie's bookkeeper.conf or "").
*/}}
{{- define "tierkeeper.bookieagent.container" -}}
{{- $b := .root.Values.bookieagent -}}
name: tierkeeper-bookieagent
image: {{ include "tierkeeper.image" (dict "root" .root "name" $b.imageName) }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
args:
  - serve
  - --listen=:{{ $b.port }}
  {{- range .journal }}
  - --journal-dir={{ . }}
  {{- end }}
  {{- range .ledgers }}
  - --ledger-dir={{ . }}
  {{- end }}
  {{- if .host }}
  - --path.procfs=/host/proc
  - --path.sysfs=/host/sys
  {{- end }}
  {{- with .conf }}
  - --conf={{ . }}
  {{- end }}
  - --interval={{ $b.interval }}
  - --window={{ $b.window }}
  - --disk-usage-threshold={{ $b.diskUsageThreshold }}
  - --disk-usage-warn-threshold={{ $b.diskUsageWarnThreshold }}
  - --disk-usage-lwm-threshold={{ $b.diskUsageLwmThreshold }}
  {{- range $b.extraArgs }}
  - {{ . | quote }}
  {{- end }}
ports:
  - name: tk-agent
    containerPort: {{ $b.port }}
    protocol: TCP
{{- if .host }}
readinessProbe:
  httpGet: {path: /healthz, port: tk-agent}
  initialDelaySeconds: 5
  periodSeconds: 30
  timeoutSeconds: 5
{{- end }}
{{- /* No readiness probe in the bookie pod: the agent must never make a
bookie unready (its Service, the StatefulSet's rolling update). A failing
liveness probe restarts only the agent's container. */}}
livenessProbe:
  httpGet: {path: /healthz, port: tk-agent}
  initialDelaySeconds: 60
  periodSeconds: 60
  timeoutSeconds: 5
  failureThreshold: 3
resources:
  {{- toYaml $b.resources | nindent 2 }}
securityContext:
  {{- include "tierkeeper.containerSecurity" . | nindent 2 }}
  {{- with .runAs }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
volumeMounts:
  {{- toYaml .mounts | nindent 2 }}
{{- end -}}
