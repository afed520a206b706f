;;; emacs-e2e.el --- `tpulint server' through Emacs's Eglot client, headless  -*- lexical-binding: t -*-
;; Configured the way docs/editors.md tells Emacs users to (eglot-server-programs and
;; eglot-workspace-configuration), it checks: the TPU401 diagnostic reaches Flymake with its code,
;; the quick fix and the noqa action are offered, the quick fix applies, the diagnostic clears,
;; and hover on a finding shows the rule's documentation.
;; Usage: SERVER_CMD='tpulint server' PYFILE=/path/train.py emacs --batch -l emacs-e2e.el
;; (--batch without -Q: -Q would stop Debian from loading the elpa-eglot package.)
;; Exit code 0 = pass, 1 = fail.
(require 'eglot)
(require 'python)
(require 'cl-lib)

(defvar tpulint-e2e-publishes nil "Diagnostic counts of each publishDiagnostics, newest first.")

;; Record every publish before Eglot hands it to Flymake.
(cl-defmethod eglot-handle-notification :before
  (_server (_method (eql textDocument/publishDiagnostics)) &key diagnostics &allow-other-keys)
  (push (length diagnostics) tpulint-e2e-publishes))

(defun tpulint-e2e-wait (predicate seconds)
  "Process server output until PREDICATE holds or SECONDS pass; return PREDICATE's value."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(defun tpulint-e2e-finish (ok reason)
  (princ (format "%s: %s\n" (if ok "PASS" "FAIL") reason))
  (kill-emacs (if ok 0 1)))

(defun tpulint-e2e-fail (format-string &rest args)
  (tpulint-e2e-finish nil (apply #'format format-string args)))

(condition-case err
    (let* ((file (getenv "PYFILE"))
           (eglot-sync-connect t)
           (buffer (find-file-noselect file)))
      ;; The configuration docs/editors.md shows.
      (add-to-list 'eglot-server-programs `(python-mode . ,(split-string (getenv "SERVER_CMD"))))
      (setq-default eglot-workspace-configuration '(:tpulint (:backend "auto" :unsafeFixes :json-false)))
      (with-current-buffer buffer
        (python-mode)
        (eglot-ensure)
        ;; eglot-ensure connects from a hook that --batch runs only when asked.
        (run-hooks 'post-command-hook)
        (unless (tpulint-e2e-wait (lambda () (eglot-current-server)) 20)
          (tpulint-e2e-fail "Eglot did not connect to the server"))
        (unless (tpulint-e2e-wait (lambda () tpulint-e2e-publishes) 20)
          (tpulint-e2e-fail "no publishDiagnostics within 20 s"))
        (flymake-start)
        (tpulint-e2e-wait (lambda () (flymake-diagnostics)) 5)
        (let* ((diagnostics (flymake-diagnostics))
               (diagnostic (car diagnostics)))
          (unless (= (length diagnostics) 1)
            (tpulint-e2e-fail "expected 1 Flymake diagnostic, got %S"
                              (mapcar #'flymake-diagnostic-text diagnostics)))
          (unless (= (line-number-at-pos (flymake-diagnostic-beg diagnostic)) 4)
            (tpulint-e2e-fail "diagnostic on line %d, expected 4"
                              (line-number-at-pos (flymake-diagnostic-beg diagnostic))))
          (unless (string-match-p "TPU401" (flymake-diagnostic-text diagnostic))
            (tpulint-e2e-fail "diagnostic text lacks its code: %S" (flymake-diagnostic-text diagnostic)))
          ;; Hover on the finding: the rule's documentation in Markdown.
          (let ((hover (save-excursion
                         (goto-char (flymake-diagnostic-beg diagnostic))
                         (jsonrpc-request (eglot-current-server) :textDocument/hover
                                          (eglot--TextDocumentPositionParams)))))
            (unless (string-match-p "## Why is this bad\\?"
                                    (or (plist-get (plist-get hover :contents) :value) ""))
              (tpulint-e2e-fail "hover lacks the rule documentation: %S" hover)))
          (let* ((actions (eglot-code-actions (flymake-diagnostic-beg diagnostic)
                                              (flymake-diagnostic-end diagnostic) "quickfix"))
                 (titles (mapcar (lambda (action) (plist-get action :title)) actions))
                 (fix (cl-find "tpulint (TPU401): Replace with `\"xla\"`" actions
                               :key (lambda (action) (plist-get action :title)) :test #'equal))
                 (published (length tpulint-e2e-publishes)))
            (unless (and fix (member "tpulint (TPU401): Disable for this line" titles))
              (tpulint-e2e-fail "missing code actions, got %S" titles))
            (eglot--apply-workspace-edit (plist-get fix :edit))
            ;; Idle timers never fire in --batch: send the pending didChange as the timer would.
            (eglot--signal-textDocument/didChange)
            (let ((line (save-excursion (goto-char (point-min)) (forward-line 3)
                                        (buffer-substring-no-properties (line-beginning-position)
                                                                        (line-end-position)))))
              (unless (equal line "device = torch.device(\"xla\")")
                (tpulint-e2e-fail "the fix produced %S" line)))
            (if (tpulint-e2e-wait (lambda () (and (> (length tpulint-e2e-publishes) published)
                                                  (= 0 (car tpulint-e2e-publishes))))
                                  20)
                (tpulint-e2e-finish t "diagnostic with its code, hover docs, quick fix applied, diagnostic cleared")
              (tpulint-e2e-fail "the diagnostic did not clear after the fix"))))))
  (error (tpulint-e2e-fail "error: %S" err)))
