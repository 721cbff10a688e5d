/**
 * Reading Prometheus text format in tests: the metric families a scrape declares, the value of one sample,
 * and Prometheus's naming rules (https://prometheus.io/docs/practices/naming/) checked family by family.
 */

export interface Family {
  name: string;
  type: string;
}

/** The families a scrape declares (`# TYPE name type`), in order. */
export function families(text: string): Family[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('# TYPE '))
    .map((l) => {
      const [, , name, type] = l.split(' ');
      return { name: name!, type: type! };
    });
}

/** Every series name a scrape can be queried by: each family's, and a histogram's _bucket, _sum and _count. */
export function seriesNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const { name, type } of families(text)) {
    names.add(name);
    if (type === 'histogram' || type === 'summary') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
  }
  return names;
}

/** The value of the sample written exactly as `series` (name and labels), or undefined. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Units a name may end in (base units, plural, as the naming guide asks), before any _total. */
const UNITS = ['seconds', 'bytes', 'usd', 'ratio', 'info'];

/**
 * What breaks the naming rules in Waybill's own families (waybill_), one line per family; empty when none does.
 * prom-client's process_ and nodejs_ defaults keep the names every Node.js dashboard knows them by (a few
 * of its gauges end in _total).
 */
export function namingProblems(text: string): string[] {
  const problems: string[] = [];
  for (const { name, type } of families(text).filter((f) => f.name.startsWith('waybill_'))) {
    if (!/^[a-z][a-z0-9_]*$/.test(name) || name.includes('__')) problems.push(`${name}: not snake_case`);
    if (type === 'counter' && !name.endsWith('_total')) problems.push(`${name}: a counter without _total`);
    if (type !== 'counter' && name.endsWith('_total')) problems.push(`${name}: a ${type} named _total`);
    if (type === 'histogram' && !UNITS.some((u) => name.endsWith(`_${u}`)))
      problems.push(`${name}: a histogram without its unit`);
    // A time or a size always says its unit, and a base one: no _ms, _milliseconds, _kb.
    if (/_(ms|milliseconds|minutes|hours|kb|mb|percent)(_|$)/.test(name)) problems.push(`${name}: not a base unit`);
    if (/(duration|age|latency|time)$/.test(name)) problems.push(`${name}: a time without _seconds`);
  }
  return problems;
}
