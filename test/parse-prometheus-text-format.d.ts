// Types for parse-prometheus-text-format (it ships none): the prom2json shape it returns.
declare module "parse-prometheus-text-format" {
  export interface PromSample {
    value?: string;
    labels?: Record<string, string>;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  export interface PromFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: PromSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PromFamily[];
}
