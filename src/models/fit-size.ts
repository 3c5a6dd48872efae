/**
 * Fitting a requested size into what a model renders: sides on its grid within its side range, the area
 * within a pixel budget. A size that does not fit is scaled down keeping its aspect ratio (never refused
 * while some grid size fits), then each side goes to the grid multiple nearest the request that keeps the
 * area inside the budget.
 */
export interface GridLimits {
  grid: number;
  minSide: number;
  maxSide: number;
  maxPixels: number;
}

export interface FitResult {
  width: number;
  height: number;
  /** Set when the size had to shrink to fit the budget or side range (not merely snapped to the grid). */
  scaledDown: boolean;
}

/** The fitted size, or undefined when not even the smallest grid size fits the budget. */
export function fitOnGrid(width: number, height: number, lim: GridLimits): FitResult | undefined {
  const lo = Math.ceil(lim.minSide / lim.grid) * lim.grid;
  const hi = Math.floor(lim.maxSide / lim.grid) * lim.grid;
  if (lo > hi || lo * lo > lim.maxPixels) return undefined;
  // Shrink (keeping the aspect) until both sides and the area are inside the limits.
  const scale = Math.min(1, hi / width, hi / height, Math.sqrt(lim.maxPixels / (width * height)));
  const w = width * scale;
  const h = height * scale;
  const clamp = (v: number): number => Math.min(hi, Math.max(lo, v));
  const sides = (v: number): number[] => [
    ...new Set([Math.round(v / lim.grid), Math.floor(v / lim.grid), Math.ceil(v / lim.grid)].map((k) => clamp(k * lim.grid))),
  ];
  let best: { width: number; height: number; cost: number } | undefined;
  for (const cw of sides(w)) {
    for (const ch of sides(h)) {
      if (cw * ch > lim.maxPixels) continue;
      const cost = Math.abs(cw - w) + Math.abs(ch - h);
      if (!best || cost < best.cost) best = { width: cw, height: ch, cost };
    }
  }
  if (!best) {
    // Only the floors are left (rounding up broke the budget): they fit by construction unless clamped up.
    const fw = clamp(Math.floor(w / lim.grid) * lim.grid);
    const fh = clamp(Math.floor(h / lim.grid) * lim.grid);
    if (fw * fh > lim.maxPixels) return undefined;
    best = { width: fw, height: fh, cost: 0 };
  }
  return { width: best.width, height: best.height, scaledDown: scale < 1 };
}
