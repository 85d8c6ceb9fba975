// One uPlot chart: lines over a shared x, an optional spread band, vertical marks (curriculum stages), drag to
// zoom (double-click resets), the legend showing the values under the cursor, and the cursor synced across the
// charts of one x axis. uPlot draws on a canvas; the container's data- attributes say what it holds.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Line {
  readonly label: string;
  readonly values: readonly (number | null)[];
  readonly dash?: boolean;
  /** Drawn only as the edge of a band (faint), not as a line of its own. */
  readonly edge?: boolean;
}

export interface ChartProps {
  readonly id: string;
  readonly title: string;
  readonly x: readonly number[];
  readonly xLabel: string;
  readonly lines: readonly Line[];
  /** Indices into `lines` of a band's upper and lower edge. */
  readonly band?: readonly [number, number];
  readonly marks?: readonly { readonly x: number; readonly label: string }[];
  /** Charts with the same key move their cursors together. */
  readonly syncKey?: string;
  /** x values are unix seconds. */
  readonly time?: boolean;
  readonly height?: number;
}

const PALETTE = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

const INTEGER_TICKS = [
  1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000, 100000,
];

const fmt = (v: number | null | undefined): string => {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
};

/** Draws a dashed vertical line and its label at each mark. */
function marksPlugin(marks: readonly { x: number; label: string }[]): uPlot.Plugin {
  return {
    hooks: {
      draw: (u) => {
        const { ctx } = u;
        const { top, height } = u.bbox;
        ctx.save();
        ctx.strokeStyle = '#888';
        ctx.fillStyle = '#555';
        ctx.setLineDash([4, 4]);
        ctx.font = `${11 * devicePixelRatio}px sans-serif`;
        for (const m of marks) {
          const px = u.valToPos(m.x, 'x', true);
          if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) continue;
          ctx.beginPath();
          ctx.moveTo(px, top);
          ctx.lineTo(px, top + height);
          ctx.stroke();
          ctx.fillText(m.label, px + 3 * devicePixelRatio, top + 12 * devicePixelRatio);
        }
        ctx.restore();
      },
    },
  };
}

export function Chart(p: ChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  /** Whether the user has zoomed in (then new points must not reset the x range). */
  const zoomed = useRef(false);
  const shape = `${p.lines.map((l) => l.label).join('|')}|${p.band?.join(',')}|${JSON.stringify(p.marks ?? [])}`;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    let colour = 0;
    const series: uPlot.Series[] = [
      {
        label: p.xLabel,
        value: p.time ? (_u, v) => (v == null ? '–' : new Date(v * 1000).toLocaleTimeString()) : undefined,
      },
      ...p.lines.map((l): uPlot.Series => {
        const c = l.edge ? '#9ec5e8' : PALETTE[colour++ % PALETTE.length]!;
        return {
          label: l.label,
          stroke: c,
          width: l.edge ? 1 : 1.5,
          dash: l.dash ? [5, 4] : undefined,
          spanGaps: true,
          points: { show: p.x.length < 60, size: 4 },
          value: (_u, v) => fmt(v),
        };
      }),
    ];
    const opts: uPlot.Options = {
      width: Math.max(300, el.clientWidth),
      height: p.height ?? 220,
      series,
      scales: { x: { time: p.time ?? false } },
      axes: [
        // Steps and versions are whole numbers: no tick at 1.5.
        { label: p.xLabel, size: 40, ...(p.time ? {} : { incrs: INTEGER_TICKS }) },
        { size: 56, values: (_u, vals) => vals.map((v) => fmt(v)) },
      ],
      cursor: { sync: p.syncKey ? { key: p.syncKey } : undefined, drag: { x: true, y: false } },
      bands: p.band ? [{ series: [p.band[0] + 1, p.band[1] + 1], fill: 'rgba(31,119,180,0.15)' }] : undefined,
      plugins: p.marks?.length ? [marksPlugin(p.marks)] : [],
      legend: { live: true },
      hooks: {
        setScale: [
          (u, key) => {
            if (key !== 'x') return;
            const xs = u.data[0];
            const lo = xs[0];
            const hi = xs[xs.length - 1];
            const s = u.scales.x!;
            zoomed.current =
              lo !== undefined && hi !== undefined && ((s.min ?? lo) > lo || (s.max ?? hi) < hi);
          },
        ],
      },
    };
    const u = new uPlot(opts, data(p), el);
    plot.current = u;
    const resize = new ResizeObserver(() =>
      u.setSize({ width: Math.max(300, el.clientWidth), height: p.height ?? 220 }),
    );
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
    // Rebuilt only when the lines change; new points of the same lines go through setData below.
  }, [shape]);

  useEffect(() => {
    // Keeps a zoom the user made while new points arrive.
    plot.current?.setData(data(p), !zoomed.current);
  }, [p.x, p.lines]);

  return (
    <section
      class="chart"
      data-chart={p.id}
      data-points={p.x.length}
      data-series={p.lines.map((l) => l.label).join('|')}
      data-marks={(p.marks ?? []).map((m) => `${m.label}@${m.x}`).join('|')}
    >
      <h3>{p.title}</h3>
      <div ref={host} />
    </section>
  );
}

function data(p: ChartProps): uPlot.AlignedData {
  return [
    Float64Array.from(p.x),
    ...p.lines.map((l) => l.values.map((v) => (v === null ? null : v)) as (number | null)[]),
  ];
}
