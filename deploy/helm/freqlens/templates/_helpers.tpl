{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "freqlens.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "freqlens.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The labels that select the pods. */}}
{{- define "freqlens.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Memory from the capacity formula, in MiB: RSS 117 MB + 11.8 KB a series (the request),
     half again as the limit, and GOMEMLIMIT at 90% of the limit. */}}
{{- define "freqlens.memoryRequestMiB" -}}
{{- $series := int .Values.capacity.seriesPerReplica -}}
{{- add 117 (div (add (mul $series 118) 10239) 10240) -}}
{{- end -}}
{{- define "freqlens.memoryLimitMiB" -}}
{{- div (mul (int (include "freqlens.memoryRequestMiB" .)) 3) 2 -}}
{{- end -}}
{{- define "freqlens.gomemlimitMiB" -}}
{{- div (mul (int (include "freqlens.memoryLimitMiB" .)) 9) 10 -}}
{{- end -}}

{{/* The service's shutdown timeout in seconds (service.shutdown_timeout, "30s"). */}}
{{- define "freqlens.shutdownSeconds" -}}
{{- $t := toString (default "30s" (dig "service" "shutdown_timeout" "30s" .Values.config)) -}}
{{- if not (regexMatch "^([0-9]+m)?([0-9]+s)?$" $t) | or (eq $t "") -}}
{{- fail (printf "config.service.shutdown_timeout %q: give it in whole minutes and seconds, such as 30s or 1m30s, so that the pods' terminationGracePeriodSeconds can cover the drain" $t) -}}
{{- end -}}
{{- $m := regexFind "[0-9]+m" $t | trimSuffix "m" | default "0" | int -}}
{{- $s := regexFind "[0-9]+s" $t | trimSuffix "s" | default "0" | int -}}
{{- add (mul $m 60) $s -}}
{{- end -}}
