{{/* Names and labels shared by every object of the chart. */}}

{{/* The release's objects are named after the release, or <release>-koordlet when
the release name does not say koordlet already. */}}
{{- define "koordlet.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "koordlet.namespace" -}}
{{- default .Release.Namespace .Values.installation.namespace -}}
{{- end -}}

{{- define "koordlet.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "koordlet.labels" -}}
{{ include "koordlet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* <imageRepositoryHost>/<repository>:<tag>; with no host, <repository>:<tag>, the name
`make image`'s archive carries (a runtime reads it as docker.io/<repository>). */}}
{{- define "koordlet.image" -}}
{{- $tag := default .Chart.AppVersion .Values.koordlet.image.tag -}}
{{- $repo := printf "%s:%s" .Values.koordlet.image.repository (toString $tag) -}}
{{- with .Values.imageRepositoryHost }}{{ printf "%s/%s" (trimSuffix "/" .) $repo }}{{ else }}{{ $repo }}{{ end -}}
{{- end -}}

{{/* The gates Koordinator's chart gives koordlet when its value is empty (values.yaml
says what each one does here). */}}
{{- define "koordlet.defaultFeatureGates" -}}
BECPUEvict=true,BEMemoryEvict=true,CgroupReconcile=true,Accelerators=true
{{- end -}}

{{/* --feature-gates: featureGates and koordlet.features (Koordinator's chart's name),
joined; both empty, the default set above. A value set replaces that set whole, as in
Koordinator's chart: nothing of it is added to the user's gates. */}}
{{- define "koordlet.featureGates" -}}
{{- $set := join "," (compact (list .Values.featureGates .Values.koordlet.features)) -}}
{{- default (include "koordlet.defaultFeatureGates" .) $set -}}
{{- end -}}

{{/* OOMScoreAdj on (named, or by AllAlpha unless named off): lowering a process's
oom_score_adj needs CAP_SYS_RESOURCE. */}}
{{- define "koordlet.oomScoreAdj" -}}
{{- $g := include "koordlet.featureGates" . -}}
{{- if or (contains "OOMScoreAdj=true" $g) (and (contains "AllAlpha=true" $g) (not (contains "OOMScoreAdj=false" $g))) }}true{{ else }}false{{ end -}}
{{- end -}}

{{/* The container is privileged when asked, or to mount resctrl (see values.yaml). */}}
{{- define "koordlet.privileged" -}}
{{- if or .Values.koordlet.privileged .Values.koordlet.resctrl.mount }}true{{ else }}false{{ end -}}
{{- end -}}

{{/* Where the kubelet CA file from the host is mounted in the container. */}}
{{- define "koordlet.kubeletCAPath" -}}/etc/kubelet-ca/ca.crt{{- end -}}

{{- define "koordlet.serviceAccountDir" -}}/var/run/secrets/kubernetes.io/serviceaccount{{- end -}}
