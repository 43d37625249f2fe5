{{/* Chart name, truncated to the 63 characters Kubernetes names allow. */}}
{{- define "freshmark.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name; used as the prefix of every object. */}}
{{- define "freshmark.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "freshmark.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels shared by every object. */}}
{{- define "freshmark.labels" -}}
helm.sh/chart: {{ include "freshmark.chart" . }}
{{ include "freshmark.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: freshmark
{{- end }}

{{- define "freshmark.selectorLabels" -}}
app.kubernetes.io/name: {{ include "freshmark.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one component: pass (dict "root" $ "component" "worker" "queue" "hot"). */}}
{{- define "freshmark.componentLabels" -}}
{{ include "freshmark.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- with .queue }}
freshmark.io/queue: {{ . }}
{{- end }}
{{- end }}

{{- define "freshmark.componentSelector" -}}
{{ include "freshmark.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- with .queue }}
freshmark.io/queue: {{ . }}
{{- end }}
{{- end }}

{{- define "freshmark.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "freshmark.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "freshmark.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "freshmark.secretName" -}}
{{- printf "%s-env" (include "freshmark.fullname" .) }}
{{- end }}

{{- define "freshmark.redisUrl" -}}
{{- if .Values.redis.enabled }}
{{- printf "redis://%s-redis:6379/0" (include "freshmark.fullname" .) }}
{{- else }}
{{- required "redis.externalUrl is required when redis.enabled is false" .Values.redis.externalUrl }}
{{- end }}
{{- end }}

{{/* The in-chart Redis password: the value, else the one already installed, else random. */}}
{{- define "freshmark.redisPassword" -}}
{{- if .Values.redis.auth.password }}
{{- .Values.redis.auth.password }}
{{- else }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "freshmark.secretName" .) }}
{{- if and $existing (hasKey (default dict $existing.data) "REDIS_PASSWORD") }}
{{- index $existing.data "REDIS_PASSWORD" | b64dec }}
{{- else }}
{{- randAlphaNum 32 }}
{{- end }}
{{- end }}
{{- end }}

{{/* Host names the MCP endpoint answers to (DNS rebinding protection), comma-separated. */}}
{{- define "freshmark.mcpAllowedHosts" -}}
{{- $name := include "freshmark.fullname" . }}
{{- $hosts := list $name (printf "%s:*" $name) (printf "%s.%s.svc" $name .Release.Namespace) (printf "%s.%s.svc:*" $name .Release.Namespace) }}
{{- if and .Values.ingress.enabled .Values.ingress.exposeApi }}
{{- $hosts = append $hosts .Values.ingress.host }}
{{- end }}
{{- join "," (concat $hosts .Values.serve.mcpAllowedHosts) }}
{{- end }}

{{/* The component (and name suffix) of Chroma shard N: chroma, chroma-1, chroma-2, ... */}}
{{- define "freshmark.chromaComponent" -}}
{{- if eq (int .) 0 }}chroma{{ else }}chroma-{{ . }}{{ end }}
{{- end }}

{{/* The Chroma servers, comma-separated: the in-chart shards, or the external ones. */}}
{{- define "freshmark.chromaUrl" -}}
{{- if .Values.chroma.enabled }}
{{- $name := include "freshmark.fullname" . }}
{{- $urls := list }}
{{- range $shard := until (int .Values.chroma.shards) }}
{{- $urls = append $urls (printf "http://%s-%s:8000" $name (include "freshmark.chromaComponent" $shard)) }}
{{- end }}
{{- join "," $urls }}
{{- else if .Values.chroma.externalUrls }}
{{- join "," .Values.chroma.externalUrls }}
{{- else }}
{{- required "chroma.externalUrl is required when chroma.enabled is false (or chroma.externalUrls, several servers)" .Values.chroma.externalUrl }}
{{- end }}
{{- end }}

{{/* Pod annotations that roll pods when the config or the secrets change. */}}
{{- define "freshmark.checksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}

{{/* Environment every freshmark container gets. */}}
{{- define "freshmark.env" -}}
- name: FRESHMARK_CONFIG
  value: /etc/freshmark/freshmark.toml
- name: FRESHMARK_HOME
  value: /var/lib/freshmark
- name: FRESHMARK_EMBEDDER
  value: {{ .Values.embedder | quote }}
{{- $chroma := include "freshmark.chromaUrl" . }}
- name: {{ ternary "FRESHMARK_CHROMA_URLS" "FRESHMARK_CHROMA_URL" (contains "," $chroma) }}
  value: {{ $chroma | quote }}
- name: FRESHMARK_VISIBILITY_TIMEOUT_SECONDS
  value: {{ .Values.timings.visibilityTimeoutSeconds | quote }}
- name: FRESHMARK_LOCK_LEASE_SECONDS
  {{- if ge (int .Values.timings.lockLeaseSeconds) (int .Values.timings.visibilityTimeoutSeconds) }}
  {{- fail "timings.lockLeaseSeconds must be below timings.visibilityTimeoutSeconds" }}
  {{- end }}
  value: {{ .Values.timings.lockLeaseSeconds | quote }}
- name: HOME
  value: /tmp
{{- end }}

{{/* The chart's Secret (Redis URL, token, webhook secrets) and an existing one if named. */}}
{{- define "freshmark.envFrom" -}}
- secretRef:
    name: {{ include "freshmark.secretName" . }}
{{- with .Values.secrets.existingSecret }}
- secretRef:
    name: {{ . }}
{{- end }}
{{- end }}

{{/* Volumes every freshmark pod mounts: config, FRESHMARK_HOME, a writable /tmp. */}}
{{- define "freshmark.volumes" -}}
- name: config
  configMap:
    name: {{ include "freshmark.fullname" . }}-config
- name: home
{{- if .Values.mirrorCache.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.mirrorCache.existingClaim }}
{{- else if .Values.mirrorCache.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ include "freshmark.fullname" . }}-mirror-cache
{{- else }}
  emptyDir:
    sizeLimit: {{ .Values.mirrorCache.sizeLimit }}
{{- end }}
- name: tmp
  emptyDir: {}
{{- end }}

{{- define "freshmark.volumeMounts" -}}
- name: config
  mountPath: /etc/freshmark
  readOnly: true
- name: home
  mountPath: /var/lib/freshmark
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* Pod-level settings shared by the freshmark Deployments. */}}
{{- define "freshmark.podCommon" -}}
serviceAccountName: {{ include "freshmark.serviceAccountName" . }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
