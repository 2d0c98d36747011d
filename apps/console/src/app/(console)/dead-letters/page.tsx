import type { Metadata } from "next";
import { Suspense } from "react";
import { Loading } from "../../../components/states";
import { DeadLettersView } from "./dead-letters-view";

export const metadata: Metadata = { title: "Dead letters" };

/** Failure groups of dead jobs: filters, sort and page in the URL. */
export default function DeadLettersPage() {
  return (
    <Suspense fallback={<Loading />}>
      <DeadLettersView />
    </Suspense>
  );
}
