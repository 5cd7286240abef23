// Package measure measures a trained model offline on a set of windows
// (a model.Source): its errors and attribution shares (Evaluate, and
// Evaluator for a model measured again and again, as training does after
// every epoch), the faithfulness of its attribution to removal
// (Perturbation) and the quantiles of its errors that a served model's
// prediction intervals start from (ErrorQuantiles).
//
// Package model is the network; measuring it is a use of the network, as
// training is, so it lives here, on model's exported API (model.Batcher
// reads the windows as the model takes them).
//
// Under the standard protocol the windows are the test split, z-scored
// with the training rows' statistics (dataset.Standard), and the numbers
// are on that scale. Results do not depend on the number of workers:
// partial sums are kept per batch and added in batch order.
package measure
