import { Loading } from "../../components/states";

/** Shown while a console page's server part renders. */
export default function ConsoleLoading() {
  return <Loading />;
}
