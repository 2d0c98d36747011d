/** A form's error under its fields, announced to screen readers (role alert); nothing without a message. */
export function FormError({ message, id }: { message: string | null | undefined; id?: string }) {
  if (!message) return null;
  return (
    <p id={id} className="form-error" role="alert">
      {message}
    </p>
  );
}
