// What shows while a part's chunk loads (a few milliseconds on a warm cache).

import { Spinner } from "../../components/Spinner/Spinner";

export function PartFallback({ label }: { label: string }) {
  return (
    <div className="vst-part-fallback" role="status" aria-busy="true" aria-label={`Loading ${label}`} data-vestibule-part-loading="">
      <Spinner />
    </div>
  );
}
