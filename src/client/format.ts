/** Traded volumes, compactly (950, 12.3K, 4.5M), so a column of them stays narrow. */
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

export const formatVolume = (n: number): string => compact.format(n);
