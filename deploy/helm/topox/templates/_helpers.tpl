{{/* SPDX-License-Identifier: Apache-2.0 */}}
{{/* The labels every object carries (manifests/ has the same, kustomize's managed-by aside). */}}
{{- define "topox.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "topox.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The port the in-container probes ask: the admin listener's when there is one (and with TLS,
     which the probes do not speak), else the extender's. */}}
{{- define "topox.probePort" -}}
{{- if .Values.serve.adminListen -}}
{{ splitList ":" .Values.serve.adminListen | last }}
{{- else -}}
8888
{{- end -}}
{{- end -}}

{{- define "topox.probe" -}}
exec:
  command:
    - /bin/bash
    - -c
    - exec 3<>/dev/tcp/127.0.0.1/{{ include "topox.probePort" .root }} && printf 'GET {{ .path }} HTTP/1.0\r\n\r\n' >&3 && head -n1 <&3 | grep -q ' 200 '
{{- end -}}
