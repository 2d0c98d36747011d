/**
 * A small bar for one ratio (`value` of `max`) with its text, as the overview's running/cap bar:
 * a limit (`isLimit`, the default) shows full in the warning colour; with no max, the value alone
 * and `noMax`.
 */
export function RatioBar({
  value,
  max,
  text,
  noMax = "no limit",
  isLimit = true,
  testId,
}: {
  value: number;
  max: number | null;
  text: string;
  noMax?: string;
  isLimit?: boolean;
  testId?: string;
}) {
  if (max === null || max <= 0)
    return (
      <span data-testid={testId}>
        {text} <span className="muted">/ {noMax}</span>
      </span>
    );
  const ratio = Math.min(1, Math.max(0, value / max));
  return (
    <span className="capbar" title={`${text}: ${Math.round((value / max) * 100)}%`} data-testid={testId}>
      <span className="capbar-track" aria-hidden="true">
        <span className={`capbar-fill${isLimit && value >= max ? " full" : ""}`} style={{ width: `${ratio * 100}%` }} />
      </span>
      {text}
    </span>
  );
}

/** `33.3%`, or an em dash for null. */
export const percent = (share: number | null): string => (share === null ? "—" : `${(share * 100).toFixed(1)}%`);
